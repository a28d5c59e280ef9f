// Values as a person reads them (§10b): the format comes with each column from the semantic model
// (via the gateway's descriptor), never from the model. Intl does the locale work.
//
// Cells arrive typed: integers and floats as numbers, exact decimals as strings, dates as
// "2021-01-01", timestamps as "2021-01-01T00:00:00" (no zone: warehouse time, shown as it is).

const numberFormats = new Map();
const dateFormats = new Map();

function numberFormat(options) {
  const key = JSON.stringify(options);
  if (!numberFormats.has(key)) numberFormats.set(key, new Intl.NumberFormat(undefined, options));
  return numberFormats.get(key);
}

function dateFormat(options) {
  const key = JSON.stringify(options);
  if (!dateFormats.has(key)) dateFormats.set(key, new Intl.DateTimeFormat(undefined, options));
  return dateFormats.get(key);
}

const BY_TYPE = {
  integer: { style: 'integer' }, decimal: { style: 'decimal', decimals: 2 }, float: { style: 'decimal', decimals: 2 },
  date: { style: 'date', grain: 'day' }, timestamp: { style: 'date', grain: 'minute' },
  string: { style: 'text' }, boolean: { style: 'text' },
};

// The format of a column of a resource descriptor, or what its type implies.
export function columnFormat(descriptor, columnId) {
  const column = descriptor?.columns?.find((c) => c.id === columnId);
  if (column?.format?.style) return column.format;
  return BY_TYPE[column?.type] || { style: 'text' };
}

function localDate(text) {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?/.exec(text);
  if (!m) return null;
  return new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4] || 0), Number(m[5] || 0),
    Number(m[6] || 0));
}

function formatDate(value, grain) {
  const when = value instanceof Date ? value : localDate(String(value));
  if (!when || Number.isNaN(when.getTime())) return String(value);
  switch (grain) {
    case 'year': return String(when.getFullYear());
    case 'quarter': return `${when.getFullYear()} Q${Math.floor(when.getMonth() / 3) + 1}`;
    case 'month': return dateFormat({ month: 'short', year: 'numeric' }).format(when);
    case 'week': return `Week of ${dateFormat({ day: 'numeric', month: 'short', year: 'numeric' }).format(when)}`;
    case 'day': return dateFormat({ day: 'numeric', month: 'short', year: 'numeric' }).format(when);
    case 'hour': return dateFormat({ day: 'numeric', month: 'short', year: 'numeric', hour: 'numeric' }).format(when);
    case 'second':
      return dateFormat({ day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit',
        second: '2-digit' }).format(when);
    default:
      return dateFormat({ day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit' })
        .format(when);
  }
}

function fractionDigits(format, fallback) {
  const digits = Number.isInteger(format.decimals) ? format.decimals : fallback;
  return digits === undefined ? {} : { minimumFractionDigits: digits, maximumFractionDigits: digits };
}

// One value, formatted; null reads as an em dash (no value), never as 0.
export function formatValue(value, format = { style: 'text' }) {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'boolean') return value ? 'Yes' : 'No';
  const style = format.style || 'text';
  if (style === 'date') return formatDate(value, format.grain || 'day');
  if (style === 'text') return String(value);
  const number = typeof value === 'number' ? value : Number(value);
  if (!Number.isFinite(number)) return String(value);
  switch (style) {
    case 'integer': return numberFormat({ maximumFractionDigits: 0 }).format(number);
    case 'currency':
      return numberFormat({ style: 'currency', currency: format.currency || 'USD', ...fractionDigits(format) })
        .format(number);
    case 'percent': return numberFormat({ style: 'percent', ...fractionDigits(format, 2) }).format(number);
    default: return numberFormat(fractionDigits(format, 2)).format(number);
  }
}

// Axis ticks: the same style, without forcing decimals on round values.
export function formatTick(value, format = {}) {
  if (format.style === 'percent') return numberFormat({ style: 'percent', maximumFractionDigits: 1 }).format(value);
  if (format.style === 'currency') {
    return numberFormat({ style: 'currency', currency: format.currency || 'USD', notation: 'compact',
      maximumFractionDigits: 1 }).format(value);
  }
  return numberFormat({ notation: 'compact', maximumFractionDigits: 1 }).format(value);
}

export function isNumeric(format) {
  return ['integer', 'decimal', 'currency', 'percent'].includes(format?.style);
}

// An intent's or approval's status as a person reads it: INTENT_STATUS_AWAITING_APPROVAL → "awaiting approval".
export function statusInWords(status) {
  return (status || '').replace('INTENT_STATUS_', '').toLowerCase().replace(/_/g, ' ');
}

// A receipt's stable reason code, in words; none for the one its status already says.
export function reasonInWords(reason) {
  if (!reason || reason === 'REJECTED_BY_PERSON') return '';
  if (reason === 'APPROVAL_EXPIRED') return 'no decision in time';
  return reason.toLowerCase().replace(/_/g, ' ');
}
