// What a person can do with a result besides reading it: draw it as another chart type its contract allows,
// take its rows away as CSV, and ask about one of its values. Plain functions, checked in Node
// (tests/web/unit/test_web_result_tools.py); the elements in components.js call them.

import { formatValue } from './format.js';

// The slots a spec fills with result columns, in the order a recipe lists them.
const SLOTS = ['x', 'series', 'category', 'label', 'y', 'value'];
// Shares of a whole: drawn only for a measure that adds up (a stacked average reads as a total it is not).
const WHOLE = new Set(['stacked_bar', 'donut']);

function columnsOf(spec) {
  return SLOTS.flatMap((slot) => (spec[slot] === undefined ? [] : [].concat(spec[slot])));
}

// `spec` redrawn as `recipe`: each of the recipe's slots takes the column the spec has in the slot of the same
// name when it fits, else the first unused one that fits; null when a required slot stays empty or a column of
// the spec would be left out (another chart type shows the same result, never less of it).
export function respec(spec, recipe, recipes, columns) {
  const slots = recipes[recipe];
  if (!slots) return null;
  const described = (id) => columns.find((c) => c.id === id);
  const fits = (id, slot) => {
    const column = described(id);
    return Boolean(column) && slot.roles.includes(column.role) && slot.types.includes(column.type);
  };
  const unused = columnsOf(spec);
  const take = (id) => unused.splice(unused.indexOf(id), 1)[0];
  const out = { recipe };
  for (const [name, slot] of Object.entries(slots)) {
    const own = [].concat(spec[name] ?? []).filter((id) => unused.includes(id) && fits(id, slot));
    const chosen = slot.many ? [...own, ...unused.filter((id) => !own.includes(id) && fits(id, slot))]
      : [own[0] ?? unused.find((id) => fits(id, slot))].filter(Boolean);
    if (!chosen.length) {
      if (slot.optional) continue;
      return null;
    }
    chosen.forEach(take);
    out[name] = slot.many ? chosen : chosen[0];
  }
  if (unused.length) return null;
  if (WHOLE.has(recipe) && !described(out.y ?? out.value)?.additive) return null;
  return out;
}

// The chart types `spec`'s result can be drawn as, its own first, each with the spec that draws it.
export function chartTypes(spec, recipes, columns) {
  const others = Object.keys(recipes).filter((recipe) => recipe !== spec.recipe)
    .map((recipe) => respec(spec, recipe, recipes, columns)).filter(Boolean);
  return [spec, ...others];
}

export const CHART_NAMES = { bar: 'Bar chart', grouped_bar: 'Grouped bar chart', stacked_bar: 'Stacked bar chart',
  line: 'Line chart', area: 'Area chart', scatter: 'Scatter plot', donut: 'Donut chart', heatmap: 'Heatmap' };

// A cell a spreadsheet would run as a formula (=, +, -, @, a tab or a return first) is written as text: values
// come from the warehouse, where anyone may have typed them.
function csvCell(value) {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

// The rows as CSV: the columns' labels, then the values as computed (numbers unformatted, dates as written).
export function csvOf(columns, labels, rows) {
  const lines = [columns.map((id) => csvCell(labels[id] || id)).join(',')];
  for (const row of rows) lines.push(row.map(csvCell).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

// A file name from a title: letters, digits and dashes.
export function fileName(title) {
  const stem = String(title || 'answer').toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '-').replace(/^-+|-+$/g, '');
  return `${stem.slice(0, 60) || 'answer'}.csv`;
}

const FINER = { year: 'month', quarter: 'month', month: 'day', week: 'day' };
const MONTH_NAMES = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September',
  'October', 'November', 'December'];

// A period in words any reader of questions takes the same way, whatever the page's language.
function periodWords(value, grain) {
  const m = /^(\d{4})-(\d{2})-(\d{2})/.exec(String(value));
  if (!m) return null;
  const [year, month] = [Number(m[1]), Number(m[2])];
  if (grain === 'year') return String(year);
  if (grain === 'quarter') return `Q${Math.floor((month - 1) / 3) + 1} ${year}`;
  if (grain === 'month') return `${MONTH_NAMES[month - 1]} ${year}`;
  return `the week of ${m[0]}`;
}

// The follow-up one value of a result asks ("Just Apparel, by month"; "Just March 2025, by day"): that value as a
// filter, broken down one step finer in time; null for a column that is no dimension or a day, the finest step.
export function drillQuestion(value, column) {
  if (value === null || value === undefined || !column) return null;
  if (column.role === 'time') {
    const grain = column.format?.grain || (column.type === 'date' ? 'day' : '');
    const finer = FINER[grain];
    const words = finer && periodWords(value, grain);
    return words ? `Just ${words}, by ${finer}` : null;
  }
  if (column.role !== 'dimension' || typeof value === 'boolean') return null;
  return `Just ${formatValue(value, column.format || { style: 'text' })}, by month`;
}

// What a screen reader says of a chart: what it shows, then each point with its figure as the page shows it.
export function chartWords(words, points, limit = 30) {
  const listed = points.slice(0, limit).map(([label, shown]) => `${label}: ${shown}`);
  const more = points.length > limit ? `; and ${points.length - limit} more (the table has them all)` : '';
  return `${words}. ${listed.join('; ')}${more}.`;
}
