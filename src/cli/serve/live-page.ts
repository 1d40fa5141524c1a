/**
 * The admin listener's live page (`GET /`): one self-contained HTML file, no CDN (gateways often
 * have no internet), that polls `GET /stats` every second and turns two readings into rates.
 * Keys and rule names are client- or config-supplied text: the script only ever sets them as
 * `textContent`, and the page's content security policy admits its own script alone (by hash).
 */
import { createHash } from 'node:crypto';

const SCRIPT = `
const $ = (id) => document.getElementById(id);
const readings = [];
const points = [];
const fmt = (n) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n >= 10 ? n.toFixed(1) : n.toFixed(2));
const ms = (s) => (s === undefined ? '–' : s < 0.001 ? (s * 1e6).toFixed(0) + ' µs' : (s * 1e3).toFixed(2) + ' ms');

function row(cells, numeric) {
  const tr = document.createElement('tr');
  cells.forEach((text, i) => {
    const td = document.createElement('td');
    td.textContent = text;
    if (numeric[i]) td.className = 'n';
    tr.append(td);
  });
  return tr;
}

function fill(id, rows, numeric, empty) {
  const body = $(id);
  if (rows.length) return body.replaceChildren(...rows.map((cells) => row(cells, numeric)));
  const none = row([empty], [false]);
  none.firstChild.colSpan = numeric.length;
  none.firstChild.className = 'dim';
  body.replaceChildren(none);
}

function byKey(list, key) {
  const out = new Map();
  for (const item of list) out.set(key(item), (out.get(key(item)) || 0) + item.count);
  return out;
}

function quantile(bounds, counts, q) {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return undefined;
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    const before = seen;
    seen += counts[i];
    if (seen >= q * total) {
      const low = i === 0 ? 0 : bounds[i - 1];
      const high = bounds[i];
      return low + (high - low) * ((q * total - before) / counts[i]);
    }
  }
  return bounds[bounds.length - 1];
}

function draw() {
  const canvas = $('chart');
  const ctx = canvas.getContext('2d');
  const w = (canvas.width = canvas.clientWidth * devicePixelRatio);
  const h = (canvas.height = canvas.clientHeight * devicePixelRatio);
  ctx.clearRect(0, 0, w, h);
  const top = Math.max(1, ...points.map((p) => p.decisions));
  for (const [field, color] of [['decisions', '#4ea1ff'], ['denials', '#ff6b6b'], ['shadow', '#f5c542']]) {
    ctx.strokeStyle = color;
    ctx.lineWidth = 2 * devicePixelRatio;
    ctx.beginPath();
    points.forEach((p, i) => {
      const x = (i / 59) * w;
      const y = h - (p[field] / top) * (h - 4 * devicePixelRatio) - 2 * devicePixelRatio;
      i === 0 ? ctx.moveTo(x, y) : ctx.lineTo(x, y);
    });
    ctx.stroke();
  }
  $('chart-max').textContent = fmt(top) + '/s';
}

function update(now) {
  readings.push(now);
  if (readings.length > 6) readings.shift();
  const prev = readings.length > 1 ? readings[readings.length - 2] : undefined;
  const old = readings[0];
  const dt = prev ? Math.max(0.001, (now.at - prev.at) / 1000) : 1;
  const rate = (a, b) => (prev ? Math.max(0, a - b) / dt : 0);
  const sum = (list, test) => list.filter(test).reduce((a, d) => a + d.count, 0);
  const denied = (d) => d.outcome === 'denied';
  const decisions = rate(sum(now.decisions, () => true), prev ? sum(prev.decisions, () => true) : 0);
  const denials = rate(sum(now.decisions, denied), prev ? sum(prev.decisions, denied) : 0);
  const shadow = rate(sum(now.shadowDenied, () => true), prev ? sum(prev.shadowDenied, () => true) : 0);
  $('rate-decisions').textContent = fmt(decisions);
  $('rate-denials').textContent = fmt(denials);
  $('rate-shadow').textContent = fmt(shadow);
  points.push({ decisions, denials, shadow });
  if (points.length > 60) points.shift();

  const deltas = now.latency.counts.map((n, i) => n - (old.latency.counts[i] || 0));
  const recent = deltas.some((n) => n > 0) ? deltas : now.latency.counts;
  $('p50').textContent = ms(quantile(now.latency.bounds, recent, 0.5));
  $('p99').textContent = ms(quantile(now.latency.bounds, recent, 0.99));
  const changed = (field) => (prev ? (now.degraded[field] || 0) - (prev.degraded[field] || 0) : 0);
  const failing = prev ? now.storeErrors - prev.storeErrors : 0;
  const state = changed('unavailable') > 0 ? 'breaker open' : changed('timeout') + changed('error') + failing > 0 ? 'degraded' : 'healthy';
  $('state').textContent = state;
  $('state').className = 'badge ' + state.replace(' ', '-');
  $('store').textContent = now.store;
  const held = now.slots.reduce((a, s) => a + s.held, 0);
  $('slots').textContent = String(held);
  $('leases').textContent = fmt(rate(now.leaseTakes, prev ? prev.leaseTakes : 0));
  $('in-flight').textContent = String(now.inFlight);

  const key = (d) => d.route + '\\u0000' + d.plan + '\\u0000' + d.rule;
  const allowedNow = byKey(now.decisions.filter((d) => d.outcome === 'allowed'), key);
  const deniedNow = byKey(now.decisions.filter(denied), key);
  const allowedPrev = prev ? byKey(prev.decisions.filter((d) => d.outcome === 'allowed'), key) : new Map();
  const deniedPrev = prev ? byKey(prev.decisions.filter(denied), key) : new Map();
  const shadowNow = byKey(now.shadowDenied, key);
  const shadowPrev = prev ? byKey(prev.shadowDenied, key) : new Map();
  const names = [...new Set([...allowedNow.keys(), ...deniedNow.keys(), ...shadowNow.keys()])].sort();
  fill(
    'routes',
    names.map((name) => {
      const [route, plan, rule] = name.split('\\u0000');
      return [
        route,
        plan === 'default' ? rule : plan + ' · ' + rule,
        fmt(rate(allowedNow.get(name) || 0, allowedPrev.get(name) || 0)),
        fmt(rate(deniedNow.get(name) || 0, deniedPrev.get(name) || 0)),
        fmt(rate(shadowNow.get(name) || 0, shadowPrev.get(name) || 0)),
      ];
    }),
    [false, false, true, true, true],
    'no decisions yet',
  );
  fill(
    'top',
    now.top.map((entry) => [entry.key, entry.count.toLocaleString('en-US'), entry.error ? '± ' + entry.error : 'exact']),
    [false, true, true],
    'nobody denied lately',
  );
  fill('slot-rules', now.slots.map((s) => [s.rule, String(s.held)]), [false, true], 'no concurrency rules');
  const before = new Map((prev ? prev.adaptive : []).map((a) => [a.route, a]));
  const shedRate = (a, priority) => fmt(rate(a.shed[priority] || 0, (before.get(a.route) || { shed: {} }).shed[priority] || 0));
  fill(
    'adaptive',
    now.adaptive.map((a) => [
      a.route === '' ? 'upstream' : 'route ' + a.route,
      String(a.limit),
      String(a.inFlight),
      ['critical', 'standard', 'sheddable'].map((p) => shedRate(a, p)).join(' · '),
      ms(a.latency.window) + ' · ' + ms(a.latency.no_load),
    ]),
    [false, true, true, true, true],
    'no adaptive limit (--adaptive)',
  );
  draw();
  $('updated').textContent = new Date(now.at).toLocaleTimeString();
  document.body.dataset.ready = String(readings.length);
}

async function poll() {
  try {
    const response = await fetch('stats', { cache: 'no-store' });
    if (!response.ok) throw new Error(String(response.status));
    update(await response.json());
    $('offline').hidden = true;
  } catch {
    $('offline').hidden = false;
  }
  setTimeout(poll, 1000);
}
poll();
`;

/** The page's content security policy: nothing but its own inline script and style, and /stats. */
export const LIVE_PAGE_CSP = `default-src 'none'; script-src 'sha256-${createHash('sha256').update(SCRIPT).digest('base64')}'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

export const LIVE_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Floodgate · live</title>
<style>
:root { color-scheme: dark; --bg: #0f1419; --card: #182029; --line: #2a3542; --text: #d8dee6; --dim: #8a97a6; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; background: var(--bg); color: var(--text); }
header { display: flex; align-items: center; gap: 12px; padding: 14px 24px; border-bottom: 1px solid var(--line); }
header h1 { font-size: 17px; margin: 0; font-weight: 600; }
header .dim { margin-left: auto; }
.dim { color: var(--dim); }
main { padding: 20px 24px; display: grid; gap: 16px; grid-template-columns: repeat(6, minmax(0, 1fr)); }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.stat .value { font-size: 26px; font-weight: 600; font-variant-numeric: tabular-nums; white-space: nowrap; }
.stat .value.pair { font-size: 20px; line-height: 39px; }
.stat .label { color: var(--dim); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.wide { grid-column: span 3; } .full { grid-column: 1 / -1; }
h2 { font-size: 13px; margin: 0 0 8px; color: var(--dim); font-weight: 600; text-transform: uppercase; letter-spacing: .04em; }
table { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 5px 6px; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
th { color: var(--dim); font-weight: 500; font-size: 12px; }
td.n, th.n { text-align: right; }
canvas { width: 100%; height: 140px; display: block; }
.legend span { margin-right: 14px; font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 3px; margin-right: 5px; vertical-align: middle; }
.badge { padding: 2px 10px; border-radius: 999px; font-size: 12px; font-weight: 600; }
.healthy { background: #1f4d2e; color: #8ff0a4; } .degraded { background: #5c4a12; color: #ffd866; } .breaker-open { background: #5c1f1f; color: #ff9b9b; }
#offline { position: fixed; bottom: 16px; right: 16px; background: #5c1f1f; color: #ffb3b3; padding: 8px 12px; border-radius: 6px; }
#rate-denials { color: #ff8a8a; } #rate-shadow { color: #f5c542; }
</style>
</head>
<body data-ready="0">
<header><h1>Floodgate</h1><span id="state" class="badge healthy">healthy</span><span class="dim">store <span id="store">–</span></span><span class="dim">updated <span id="updated">–</span></span></header>
<main>
<div class="card stat"><div class="label">decisions / s</div><div class="value" id="rate-decisions">–</div></div>
<div class="card stat"><div class="label">denials / s</div><div class="value" id="rate-denials">–</div></div>
<div class="card stat"><div class="label">shadow denials / s</div><div class="value" id="rate-shadow">–</div></div>
<div class="card stat"><div class="label">store p50 · p99</div><div class="value pair"><span id="p50">–</span> · <span id="p99">–</span></div></div>
<div class="card stat"><div class="label">slots held · in flight</div><div class="value pair"><span id="slots">–</span> · <span id="in-flight">–</span></div></div>
<div class="card stat"><div class="label">lease slices / s</div><div class="value" id="leases">–</div></div>
<div class="card full"><h2>Last minute <span class="dim" id="chart-max"></span></h2><canvas id="chart"></canvas>
<div class="legend"><span><i style="background:#4ea1ff"></i>decisions/s</span><span><i style="background:#ff6b6b"></i>denials/s</span><span><i style="background:#f5c542"></i>shadow denials/s</span></div></div>
<div class="card wide"><h2>By route and rule (per second)</h2><table><thead><tr><th>route</th><th>rule</th><th class="n">allowed</th><th class="n">denied</th><th class="n">shadow</th></tr></thead><tbody id="routes"></tbody></table></div>
<div class="card wide"><h2>Top denied keys (last 5–10 min)</h2><table><thead><tr><th>key</th><th class="n">denials</th><th class="n">bound</th></tr></thead><tbody id="top"></tbody></table></div>
<div class="card wide"><h2>Concurrency slots by rule</h2><table><thead><tr><th>rule</th><th class="n">held</th></tr></thead><tbody id="slot-rules"></tbody></table></div>
<div class="card wide"><h2>Adaptive limits</h2><table><thead><tr><th>for</th><th class="n">limit</th><th class="n">in flight</th><th class="n" title="critical · standard · sheddable">shed/s c·s·sh</th><th class="n" title="the last window's · with no load">latency · idle</th></tr></thead><tbody id="adaptive"></tbody></table></div>
</main>
<div id="offline" hidden>admin listener unreachable</div>
<script>${SCRIPT}</script>
</body>
</html>
`;
