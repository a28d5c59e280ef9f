// Print the contracts' caller table as JSON: method path → the principals allowed to call it.
import { callerTable } from "../src/callers.js";

console.log(JSON.stringify(Object.fromEntries([...callerTable()].map(([path, allowed]) => [path, allowed]))));
