// What the generated prop schemas (generated/catalog-schemas.js) are built from besides zod itself: A2UI's
// common types, and the two draft-07 checks zod has no method for.

import { z } from 'zod';
import { AccessibilityAttributesSchema, ChildListSchema, ComponentIdSchema, DataBindingSchema } from '@a2ui/web_core/v0_9';

// A prop the compiler always writes as a data binding ({path}). A2UI's DataBinding is an object, which the binder
// would copy as it is; described as a DataBinding but not an object itself, the binder subscribes to the path and
// hands the element the value there (a result's descriptor with its latest window, an evidence record, a state).
const boundValue = z.lazy(() => DataBindingSchema).describe(DataBindingSchema.description);

export const common = {
  AccessibilityAttributes: AccessibilityAttributesSchema,
  ChildList: ChildListSchema,
  ComponentId: ComponentIdSchema,
  DataBinding: boundValue,
};

// uniqueItems: no two items the same (as JSON).
export function uniqueItems(array) {
  return array.refine((items) => new Set(items.map((item) => JSON.stringify(item))).size === items.length,
    { message: 'items must be unique' });
}

// minProperties / maxProperties of a map.
export function propertyCount(record, min, max) {
  return record.refine((map) => Object.keys(map).length >= min && Object.keys(map).length <= max,
    { message: `between ${min} and ${max} entries` });
}

// minLength / maxLength as JSON Schema counts them: in characters (code points). zod's own min/max count UTF-16
// units, so a heading of emoji the compiler accepted would be refused here and the block lost.
export function characters(string, min, max) {
  return string.refine((text) => { const length = [...text].length; return length >= min && length <= max; },
    { message: `between ${min} and ${max} characters` });
}
