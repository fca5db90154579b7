// The state as a collapsible tree (<details> elements), and the diff of two
// JSON values as a list of paths. No dependencies.

function leaf(value) {
  const span = document.createElement('span');
  if (value === null) { span.className = 'z'; span.textContent = 'null'; }
  else if (typeof value === 'string') { span.className = 's'; span.textContent = JSON.stringify(value); }
  else if (typeof value === 'number') { span.className = 'n'; span.textContent = String(value); }
  else { span.className = 'b'; span.textContent = String(value); }
  return span;
}

function preview(value) {
  if (Array.isArray(value)) return `[${value.length}]`;
  return `{${Object.keys(value).length}}`;
}

// A node for `value` under `key`; objects and arrays open to `depth` levels.
export function tree(value, key = null, depth = 2) {
  const label = document.createElement('span');
  if (key !== null) {
    const k = document.createElement('span');
    k.className = 'k';
    k.textContent = key + ': ';
    label.append(k);
  }
  if (value === null || typeof value !== 'object') {
    const div = document.createElement('div');
    div.className = 'leaf';
    div.append(label, leaf(value));
    return div;
  }
  const details = document.createElement('details');
  if (depth > 0) details.open = true;
  const summary = document.createElement('summary');
  const dim = document.createElement('span');
  dim.className = 'z';
  dim.textContent = preview(value);
  summary.append(label, dim);
  details.append(summary);
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  for (const [k, v] of entries) details.append(tree(v, k, depth - 1));
  return details;
}

function pointer(path) {
  return '/' + path.map((p) => String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
}

// [{op: 'add'|'remove'|'replace', path, before, after}] from a to b.
export function diff(a, b, path = [], out = []) {
  if (a === b) return out;
  const objects = a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b);
  if (!objects) {
    if (JSON.stringify(a) !== JSON.stringify(b)) out.push({ op: 'replace', path: pointer(path), before: a, after: b });
    return out;
  }
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    if (!(k in b)) out.push({ op: 'remove', path: pointer([...path, k]), before: a[k] });
    else if (!(k in a)) out.push({ op: 'add', path: pointer([...path, k]), after: b[k] });
    else diff(a[k], b[k], [...path, k], out);
  }
  return out;
}
