// A chart's ECharts option, drawn from the rows of a result's window and its descriptor (formats, labels, roles):
// every category named, each point's words for a screen reader with its figure as the page shows it, and the
// follow-up each drawn item asks when clicked. Pure: checked in Node (tests/web/unit/test_web_chart_option.py).

import { columnFormat, formatTick, formatValue } from './format.js';
import { CHART_NAMES, chartWords, drillQuestion } from './result-tools.js';

export const MAX_CHART_ROWS = 1000;  // the most rows a chart asks for itself (its contract's first window is as many)
const CATEGORY_RECIPES = new Set(['bar', 'grouped_bar', 'stacked_bar', 'donut']);
const OTHER = Symbol('other');  // never equal to a warehouse value, even one that reads "Other"

// Category charts draw at most the catalog's maxCategories: with `top`, exactly the first `top` by value;
// otherwise the first ones by value and, where the measure adds up and no row was left out, "Other".
function capCategories(props, window, descriptor) {
  const spec = props.spec || {};
  const at = (id) => window.columns.indexOf(id);
  const category = spec.recipe === 'donut' ? spec.category : spec.x;
  const value = spec.recipe === 'donut' ? spec.value : spec.y;
  const columns = descriptor?.columns || [];
  const role = columns.find((c) => c.id === category)?.role;
  const cap = props.maxCategories || 12;
  const keys = [...new Set(window.rows.map((r) => String(r[at(category)])))];
  const wanted = props.top ? Math.min(props.top, cap) : cap;
  if (!CATEGORY_RECIPES.has(spec.recipe) || role === 'time' || keys.length <= wanted) {
    return { rows: window.rows, note: '' };
  }
  const totals = new Map();
  for (const r of window.rows) {
    const key = String(r[at(category)]);
    totals.set(key, (totals.get(key) || 0) + (Number(r[at(value)]) || 0));
  }
  const single = spec.recipe === 'bar' || spec.recipe === 'donut';
  // The ranking: by value for one series; in the result's own order when several series share a category.
  const ranked = single ? [...keys].sort((a, b) => totals.get(b) - totals.get(a)) : keys;
  const label = columns.find((c) => c.id === category)?.label || 'categories';
  const measure = columns.find((c) => c.id === value)?.label || 'value';
  // "Other" adds up the rows left out: only for a measure that adds up, and only with every row of the result here.
  const additive = columns.find((c) => c.id === value)?.additive && !descriptor?.truncated
    && (descriptor?.rowCount ?? Infinity) <= window.rows.length;
  if (props.top || !additive || !single) {
    const kept = new Set(ranked.slice(0, wanted));
    const how = single ? `the top ${kept.size} of ${keys.length.toLocaleString()} ${label} by ${measure}`
      : `the first ${kept.size} of ${keys.length.toLocaleString()} ${label}`;
    return { rows: window.rows.filter((r) => kept.has(String(r[at(category)]))).sort(
      (a, b) => ranked.indexOf(String(a[at(category)])) - ranked.indexOf(String(b[at(category)]))),
    note: `Showing ${how}${props.top ? '' : '; the table has them all'}.` };
  }
  const kept = new Set(ranked.slice(0, cap - 1));
  const rest = ranked.slice(cap - 1);
  const other = window.rows[0].slice();
  other[at(category)] = OTHER;
  other[at(value)] = rest.reduce((sum, key) => sum + totals.get(key), 0);
  const rows = window.rows.filter((r) => kept.has(String(r[at(category)]))).sort(
    (a, b) => ranked.indexOf(String(a[at(category)])) - ranked.indexOf(String(b[at(category)])));
  return { rows: [...rows, other], otherLabel: `Other (${rest.length.toLocaleString()})`,
    note: `Showing the top ${kept.size} of ${keys.length.toLocaleString()} ${label} by ${measure}; the other ${
      rest.length.toLocaleString()} are added up as Other.` };
}

const LONG_LABEL = 10;  // characters: longer category labels, or more than MANY_BARS of them, lie as rows
const MANY_BARS = 6;

// Every category named: bars of categories with long or many labels are drawn lying down, one label a row,
// wrapped where they are long; standing bars label every category, wrapped to fit beneath it.
function labelled(option, labels, horizontal, width) {
  const category = { type: 'category', data: labels, axisLabel: { interval: 0, hideOverlap: false, lineHeight: 14,
    width: horizontal ? Math.round(Math.min(260, Math.max(90, width * 0.34))) : 90, overflow: 'break' } };
  if (!horizontal) return { option: { ...option, xAxis: category }, height: 0 };
  return { option: { ...option, xAxis: option.yAxis, yAxis: { ...category, inverse: true } },
    height: Math.max(240, labels.length * (24 + 12 * (option.series?.length || 1)) + 80) };
}

function columnLabel(descriptor, id) {
  return descriptor?.columns?.find((c) => c.id === id)?.label || id;
}

// What every recipe's drawing reads of the result: its rows (categories capped), and each cell as the page shows it.
function reading(props, window, descriptor, width) {
  const { rows, note, otherLabel } = capCategories(props, window, descriptor);
  const fmt = (id) => columnFormat(descriptor, id);
  return {
    spec: props.spec || {}, rows, note, width,
    at: (id) => window.columns.indexOf(id),
    column: (id) => descriptor?.columns?.find((c) => c.id === id),
    name: (id) => columnLabel(descriptor, id),
    label: (id, value) => (value === OTHER ? otherLabel : formatValue(value, fmt(id))),
    shown: (id, value) => formatValue(value, fmt(id)),
    valueAxis: (id) => ({ type: 'value', axisLabel: { hideOverlap: true, formatter: (v) => formatTick(v, fmt(id)) } }),
    tooltip: (id) => ({ valueFormatter: (v) => formatValue(v, fmt(id)) }),
    // (the chart's words are its element's label: ECharts' own would read raw figures)
    base: { aria: { enabled: false }, animation: false, tooltip: { trigger: 'axis' },
      grid: { left: 16, right: 24, top: 24, bottom: 24, containLabel: true } },
  };
}

// Each recipe's drawing: the option, the points in words ([label, figure as shown]), the dimension value of each
// drawn item (what a click on it asks about), and a height where its labels need one.
function donut(r) {
  const { spec, rows, at } = r;
  return {
    option: { ...r.base, tooltip: { trigger: 'item', ...r.tooltip(spec.value) }, series: [{ type: 'pie',
      radius: ['45%', '70%'], data: rows.map((row) => ({ name: r.label(spec.category, row[at(spec.category)]),
        value: Number(row[at(spec.value)]) })) }] },
    points: rows.map((row) => [r.label(spec.category, row[at(spec.category)]),
      r.shown(spec.value, row[at(spec.value)])]),
    keys: rows.map((row) => row[at(spec.category)]),
  };
}

function seriesBars(r) {
  const { spec, rows, at } = r;
  const groups = [...new Set(rows.map((row) => String(row[at(spec.series)])))];
  const keys = [...new Map(rows.map((row) => [String(row[at(spec.x)]), row[at(spec.x)]])).values()];
  const labels = keys.map((x) => r.label(spec.x, x));
  const value = (key, group) => {
    const found = rows.find((row) => String(row[at(spec.x)]) === String(key) && String(row[at(spec.series)]) === group);
    return found ? Number(found[at(spec.y)]) : null;
  };
  const { option, height } = labelled({ ...r.base, tooltip: { trigger: 'axis', ...r.tooltip(spec.y) }, legend: {},
    yAxis: r.valueAxis(spec.y), series: groups.map((group) => ({ name: r.label(spec.series, group), type: 'bar',
      stack: spec.recipe === 'stacked_bar' ? 'all' : undefined, data: keys.map((key) => value(key, group)) })) },
  labels, lying(r, labels), r.width);
  return { option, height, keys, points: rows.map((row) => [
    `${r.label(spec.x, row[at(spec.x)])}, ${r.label(spec.series, row[at(spec.series)])}`,
    r.shown(spec.y, row[at(spec.y)])]) };
}

function scatter(r) {
  const { spec, rows, at } = r;
  return {
    option: { ...r.base, tooltip: { trigger: 'item' },
      xAxis: { ...r.valueAxis(spec.x), name: r.name(spec.x) }, yAxis: { ...r.valueAxis(spec.y), name: r.name(spec.y) },
      series: [{ type: 'scatter', data: rows.map((row) => [Number(row[at(spec.x)]), Number(row[at(spec.y)])]) }] },
    points: rows.map((row) => [r.shown(spec.x, row[at(spec.x)]), r.shown(spec.y, row[at(spec.y)])]),
    keys: rows.map(() => null),  // (two figures: no dimension to ask about)
  };
}

function heatmap(r) {
  const { spec, rows, at } = r;
  const xs = [...new Set(rows.map((row) => String(row[at(spec.x)])))];
  const ys = [...new Set(rows.map((row) => String(row[at(spec.y)])))];
  const values = rows.map((row) => Number(row[at(spec.value)]));
  return {
    option: { ...r.base, tooltip: { trigger: 'item', ...r.tooltip(spec.value) },
      xAxis: { type: 'category', data: xs.map((x) => r.label(spec.x, x)),
        axisLabel: { interval: 0, width: 90, overflow: 'break' } },
      yAxis: { type: 'category', data: ys.map((y) => r.label(spec.y, y)), axisLabel: { interval: 0 } },
      visualMap: { min: Math.min(...values), max: Math.max(...values) },
      series: [{ type: 'heatmap', data: rows.map((row) => [xs.indexOf(String(row[at(spec.x)])),
        ys.indexOf(String(row[at(spec.y)])), Number(row[at(spec.value)])]) }] },
    points: rows.map((row) => [`${r.label(spec.x, row[at(spec.x)])}, ${r.label(spec.y, row[at(spec.y)])}`,
      r.shown(spec.value, row[at(spec.value)])]),
    keys: rows.map((row) => row[at(spec.x)]),
  };
}

// A line, an area or bars: over time in time order (the axis names as many periods as fit), over categories with
// every category named.
function series(r) {
  const { spec, rows, at } = r;
  const ys = [].concat(spec.y);
  const labels = rows.map((row) => r.label(spec.x, row[at(spec.x)]));
  const option = { ...r.base, tooltip: { trigger: 'axis', ...r.tooltip(ys[0]) }, legend: ys.length > 1 ? {} : undefined,
    yAxis: r.valueAxis(ys[0]), series: ys.map((y) => ({ name: r.name(y), type: spec.recipe === 'bar' ? 'bar' : 'line',
      areaStyle: spec.recipe === 'area' ? {} : undefined,
      data: rows.map((row) => (row[at(y)] === null ? null : Number(row[at(y)]))) })) };
  const points = rows.flatMap((row, i) => ys.map((y) => [ys.length > 1 ? `${labels[i]}, ${r.name(y)}` : labels[i],
    r.shown(y, row[at(y)])]));
  const keys = rows.map((row) => row[at(spec.x)]);
  if (r.column(spec.x)?.role === 'time') {
    return { option: { ...option, xAxis: { type: 'category', data: labels } }, points, keys };
  }
  return { ...labelled(option, labels, spec.recipe === 'bar' && lying(r, labels), r.width), points, keys };
}

// Bars of categories lie down when their labels are long or many (never bars over time).
function lying(r, labels) {
  return r.column(r.spec.x)?.role !== 'time'
    && (labels.length > MANY_BARS || labels.some((l) => l.length > LONG_LABEL));
}

const DRAWINGS = { donut, grouped_bar: seriesBars, stacked_bar: seriesBars, scatter, heatmap };

// The chart of `props.spec` over the window's rows: its option, how many items it draws, the note on categories
// left out, its height (0: the default), its words, and the question each drawn item asks.
export function chartOption(props, window, descriptor, width = 600) {
  const r = reading(props, window, descriptor, width);
  const { option, points, keys, height = 0 } = (DRAWINGS[r.spec.recipe] || series)(r);
  const measures = [].concat(r.spec.y ?? r.spec.value ?? []).map(r.name);
  const by = r.spec.x ?? r.spec.category;
  const dimensions = [by, r.spec.series].filter(Boolean).map(r.name);
  const what = `${CHART_NAMES[r.spec.recipe] || 'Chart'} of ${measures.join(' and ')}${
    dimensions.length ? ` by ${dimensions.join(' and ')}` : ''}`;
  return { option, points: keys.length, note: r.note, height, words: chartWords(what, points),
    questions: keys.map((key) => (key === OTHER ? null : drillQuestion(key, r.column(by)))) };
}
