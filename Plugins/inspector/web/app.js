// The Turnstate Inspector page: the live list of actions (Server-Sent Events
// from /api/events), the state and diff of the selected one (/api/state),
// and the commands (POST /api/...). The token comes in the page's own URL
// (?token=..., the one the inspector printed); the page keeps it for this tab
// in sessionStorage (scoped to scheme, host and port: no other local service
// can read it, where a cookie would be sent to every port of 127.0.0.1),
// removes it from the address bar and sends it in the X-Turnstate-Token
// header of every request. No cookie is used.
import { tree, diff } from './tree.js';

const $ = (id) => document.getElementById(id);
const records = new Map(); // seq -> summary
let status = { paused: false, travelling: false, travel: 0, read_only: false, dropped: 0 };
let selected = null;
let filter = '';

const TOKEN_KEY = 'turnstate-inspector-token';
const query = new URLSearchParams(location.search);
if (query.has('token')) {
  sessionStorage.setItem(TOKEN_KEY, query.get('token'));
  history.replaceState(null, '', '/');
}
const token = sessionStorage.getItem(TOKEN_KEY) || '';

async function api(path, body) {
  const init = body === undefined ? { headers: { 'X-Turnstate-Token': token } } : {
    method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Turnstate-Token': token },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  };
  const response = await fetch(path, init);
  const text = await response.text();
  let data = null;
  try { data = JSON.parse(text); } catch { data = { error: text }; }
  if (!response.ok) throw new Error((data && data.error) || response.statusText);
  return data;
}

function notice(message) {
  const n = $('notice');
  n.hidden = !message;
  n.textContent = message || '';
}

function clock(ms) {
  const d = new Date(ms);
  return d.toTimeString().slice(0, 8) + '.' + String(d.getMilliseconds()).padStart(3, '0');
}

function duration(us) {
  return us >= 1000 ? (us / 1000).toFixed(1) + ' ms' : us.toFixed(1) + ' µs';
}

function row(r) {
  let tr = document.querySelector(`#actions tbody tr[data-seq="${r.seq}"]`);
  if (!tr) {
    tr = document.createElement('tr');
    tr.dataset.seq = r.seq;
    tr.addEventListener('click', () => select(r.seq));
    const body = $('actions').tBodies[0];
    // Kept in order of seq (a refresh may bring older ones).
    const after = [...body.rows].find((x) => Number(x.dataset.seq) > r.seq);
    body.insertBefore(tr, after || null);
  }
  tr.replaceChildren();
  const cells = [
    String(r.seq), r.type, clock(r.time), duration(r.duration_us), null,
    r.ok ? 'ok' : r.status.replace('TS_E_', '').toLowerCase(),
  ];
  cells.forEach((text, i) => {
    const td = document.createElement('td');
    if (i === 1) td.className = 'type';
    if (i === 4) {
      if (r.changed === null) td.append(Object.assign(document.createElement('span'), { className: 'dim', textContent: r.ok ? '?' : '' }));
      else if (r.changed.length === 0) td.append(Object.assign(document.createElement('span'), { className: 'dim', textContent: '-' }));
      else for (const k of r.changed) td.append(Object.assign(document.createElement('span'), { className: 'key', textContent: k }));
    } else {
      td.textContent = text;
    }
    if (i === 5) td.className = r.ok ? 'ok' : 'bad';
    if (i === 5 && r.message) td.title = r.message;
    tr.append(td);
  });
  tr.classList.toggle('refused', !r.ok);
  tr.classList.toggle('skipped', r.skipped);
  tr.classList.toggle('selected', r.seq === selected);
  tr.classList.toggle('future', status.travelling && r.seq > status.travel);
  tr.classList.toggle('current', status.travelling && r.seq === status.travel);
  tr.hidden = filter !== '' && !r.type.toLowerCase().includes(filter);
}

function counts() {
  $('count').textContent = `${records.size} action${records.size === 1 ? '' : 's'} (history ${status.history ?? '?'})`;
  $('dropped').textContent = `${status.dropped} dropped`;
  $('dropped').classList.toggle('some', status.dropped > 0);
  $('dropped').title = 'records this page missed because it fell behind the history ring';
}

function showStatus() {
  const mode = $('mode');
  mode.className = 'mode ' + (status.travelling ? 'past' : status.paused ? 'paused' : 'live');
  mode.textContent = status.travelling ? `in the past: after #${status.travel}` : status.paused ? 'paused' : 'live';
  $('present').hidden = !status.travelling;
  $('pause').textContent = status.paused ? 'Resume recording' : 'Pause recording';
  for (const id of ['jump', 'skip', 'dispatch', 'present']) $(id).disabled = status.read_only;
  $('import-label').hidden = status.read_only;
  if (status.read_only) $('dispatch-result').textContent = 'read-only inspector';
  for (const r of records.values()) row(r);
  counts();
}

async function refresh() {
  const data = await api('/api/actions');
  status = data.status;
  const seen = new Set();
  for (const r of data.records) { records.set(r.seq, r); seen.add(r.seq); }
  for (const seq of [...records.keys()]) {
    // A record newer than this answer came from the event stream meanwhile: kept.
    if (!seen.has(seq) && seq <= data.status.newest) {
      records.delete(seq);
      document.querySelector(`#actions tbody tr[data-seq="${seq}"]`)?.remove();
    }
  }
  showStatus();
  if (selected !== null) await select(selected, false);
}

async function select(seq, scroll = true) {
  selected = seq;
  for (const tr of $('actions').tBodies[0].rows) tr.classList.toggle('selected', Number(tr.dataset.seq) === seq);
  let data;
  try { data = await api('/api/state?seq=' + seq); } catch (e) { notice(e.message); return; }
  const r = data.record;
  $('empty').hidden = true;
  $('selected').hidden = false;
  $('title').textContent = `#${seq} ${r ? r.type : ''}`;
  $('action').textContent = JSON.stringify(data.action, null, 2);
  $('reason').hidden = !(r && r.message);
  $('reason').textContent = r && r.message ? r.message : '';
  $('skip').textContent = r && r.skipped ? 'Unskip' : 'Skip';
  $('skip').disabled = status.read_only || !r || !r.ok;
  const d = $('diff');
  d.replaceChildren();
  const s = $('state');
  s.replaceChildren();
  if (data.state === null) {
    s.textContent = 'not recorded: no browser was watching when it ran. Jump here to compute it (replays the reducers).';
    d.textContent = 'not known';
  } else {
    s.append(tree(data.state, null, 3));
    if (data.before === null) d.textContent = 'the state before it is not known';
    else {
      const changes = diff(data.before, data.state);
      if (changes.length === 0) d.textContent = r && !r.ok ? 'refused: nothing changed' : 'no change';
      for (const c of changes) {
        const line = document.createElement('div');
        line.className = 'line ' + (c.op === 'add' ? 'add' : c.op === 'remove' ? 'del' : 'chg');
        const fmt = (v) => JSON.stringify(v);
        line.textContent = c.op === 'add' ? `+ ${c.path}: ${fmt(c.after)}`
          : c.op === 'remove' ? `- ${c.path}: ${fmt(c.before)}` : `~ ${c.path}: ${fmt(c.before)} → ${fmt(c.after)}`;
        d.append(line);
      }
    }
  }
  if (scroll) document.querySelector(`#actions tbody tr[data-seq="${seq}"]`)?.scrollIntoView({ block: 'nearest' });
}

// Runs a command; its failure goes to the notice bar unless `quiet` (the
// dispatch form shows its own).
async function command(path, body, quiet = false) {
  notice('');
  try {
    const data = await api(path, body);
    if (data.status) status = data.status;
    await refresh();
    return data;
  } catch (e) {
    if (!quiet) notice(e.message);
    throw e;
  }
}

const handlers = {
  status(data) {
    const before = status;
    status = JSON.parse(data);
    // A replay or an import changes older records: fetch them again.
    if (before.travelling !== status.travelling || before.travel !== status.travel || before.newest !== status.newest || before.base !== status.base) refresh();
    showStatus();
  },
  action(data) {
    const r = JSON.parse(data);
    records.set(r.seq, r);
    row(r);
    counts();
    if (!status.travelling) document.querySelector(`#actions tbody tr[data-seq="${r.seq}"]`)?.scrollIntoView({ block: 'nearest' });
  },
  dropped(data) {
    status.dropped = JSON.parse(data).dropped;
    counts();
  },
};

// The event stream (Server-Sent Events), read with fetch so that the token
// goes in a header as everywhere else; reconnects after a second when it ends.
async function connect() {
  for (;;) {
    try {
      const response = await fetch('/api/events', { headers: { 'X-Turnstate-Token': token }, cache: 'no-store' });
      if (response.status === 403) {
        $('conn').textContent = 'refused';
        notice('The inspector refused this page\'s token: open the URL the inspector printed.');
        return;
      }
      if (!response.ok) throw new Error(response.statusText);
      $('conn').textContent = 'connected';
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let event = 'message';
          const data = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length && handlers[event]) handlers[event](data.join('\n'));
        }
      }
    } catch {
      // The connection failed or ended: try again.
    }
    $('conn').textContent = 'reconnecting…';
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

$('filter').addEventListener('input', (e) => { filter = e.target.value.trim().toLowerCase(); showStatus(); });
$('pause').addEventListener('click', () => command('/api/pause', { paused: !status.paused }));
$('present').addEventListener('click', () => command('/api/present', {}));
$('jump').addEventListener('click', () => command('/api/jump', { seq: selected }).then(() => select(selected, false)));
$('skip').addEventListener('click', () => {
  const r = records.get(selected);
  command('/api/skip', { seq: selected, skip: !(r && r.skipped) });
});
$('dispatch-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const out = $('dispatch-result');
  out.className = '';
  try {
    await command('/api/dispatch', $('dispatch-text').value, true);
    out.textContent = 'dispatched';
    out.className = 'ok';
  } catch (err) {
    out.textContent = err.message;
    out.className = 'bad';
  }
});
// Export: fetched with the token header, then saved from a blob URL.
$('export').addEventListener('click', async (e) => {
  e.preventDefault();
  try {
    const response = await fetch('/api/export', { headers: { 'X-Turnstate-Token': token } });
    if (!response.ok) throw new Error((await response.text()) || response.statusText);
    const url = URL.createObjectURL(await response.blob());
    const link = Object.assign(document.createElement('a'), { href: url, download: 'turnstate-session.journal' });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  } catch (err) {
    notice(err.message);
  }
});
$('import').addEventListener('change', async (e) => {
  const file = e.target.files[0];
  if (file) await command('/api/import', await file.text());
  e.target.value = '';
});

refresh().then(connect, (e) => notice(e.message));
