// etcd-recipes dashboard: the page. Plain ES2020, no dependencies; served
// with a CSP that forbids inline scripts and styles, so every element is
// built here with createElement/textContent (names and values are
// arbitrary bytes from etcd: never innerHTML).
//
// One model (the recipes of each prefix, keyed by recipe id, and the metric
// series), one renderer per card. A `state` or `update` message rebuilds
// only the cards whose recipe changed; ages tick and charts redraw only on
// the cards that are on screen (an IntersectionObserver keeps that set).
'use strict';
(() => {
  // What tests/cli/dashboard_browser.py reads: keep these names exact.
  const D = (window.__dashboard = { applied: [], firstRender: null, connected: false });
  const APPLIED_MAX = 5000;

  // ------------------------------------------------------------ constants
  const SECTIONS = [
    { id: 'locks', title: 'Locks & elections', kinds: ['lock_or_election', 'rwlock', 'semaphore'] },
    { id: 'queues', title: 'Queues', kinds: ['queue', 'priority_queue', 'work_queue'] },
    { id: 'barriers', title: 'Barriers', kinds: ['barrier', 'count_barrier', 'double_barrier', 'count_or_double_barrier'] },
    { id: 'counters', title: 'Counters', kinds: ['counter'] },
    { id: 'services', title: 'Services', kinds: ['services'] },
    { id: 'keys', title: 'Keys', kinds: ['transient', 'key'] }, // and any kind this page does not know
  ];
  const KIND_LABEL = {
    lock_or_election: 'lock / election', rwlock: 'rwlock', semaphore: 'semaphore',
    queue: 'queue', priority_queue: 'priority queue', work_queue: 'work queue',
    barrier: 'barrier (gate)', count_barrier: 'count barrier', double_barrier: 'double barrier',
    count_or_double_barrier: 'count / double barrier', counter: 'counter', services: 'services',
    transient: 'transient key', key: 'key',
  };
  const COLLAPSED_BY_DEFAULT = new Set(['transient', 'key']);
  const BOOKKEEPING = new Set(['producer', 'receipt', 'permits', 'value']); // shown only in "details"
  const METRIC_ORDER = ['depth', 'in_flight', 'dead_letters', 'waiters', 'holders', 'value', 'instances', 'parties'];
  const METRIC_LABEL = { in_flight: 'in flight', dead_letters: 'dead letters' };
  const STORE_KEY = 'etcd-recipes-dashboard.collapsed';

  // ------------------------------------------------------------ the model
  const model = {
    offset: 0,            // server clock - browser clock (ms)
    actions: false,       // hello.actions
    historyMs: 600000,
    stepMs: 1000,         // sample interval: a longer silence breaks the chart's line
    prefixes: new Map(),  // prefix -> {name, revision, error, stoppedAt, ids:Set, synced, banner, chip}
    cards: new Map(),     // recipe id -> card (below)
    times: [],            // sample times (server ms), shared by every series
    series: new Map(),    // recipe id -> {metric: [value|null aligned with times]}
    maxRevision: 0,
    filter: '',
  };
  // A card: {id, r (the recipe), prefix, section, sortKey, el, sig, tickers, charts, rates, collapsed}
  const sections = new Map(); // section id -> {def, el, countEl, cardsEl, list: cards sorted by sortKey}
  const kindSection = new Map();
  const ROW_ENTRY = new WeakMap(); // <tr> -> entry, for the action buttons
  const EL_CARD = new WeakMap();   // card element -> card
  const SPARK = new WeakMap();     // <svg> -> {card, metric}, for the hover tooltip
  const visible = new Set();       // cards on (or near) the screen
  const openDetails = new Set();   // recipe ids whose "details" part is open
  let collapsedStore = loadCollapsed();

  // ------------------------------------------------------------ helpers
  function h(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = String(text);
    return e;
  }
  const SVGNS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs) {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  const NUM = new Intl.NumberFormat('en-US');
  const fmtNum = (n) => (n == null || Number.isNaN(n) ? '–' : NUM.format(n));
  const pad = (n) => String(n).padStart(2, '0');
  function fmtDur(ms) {
    let s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return s + 's';
    const m = Math.floor(s / 60); s %= 60;
    if (m < 60) return `${m}m ${pad(s)}s`;
    const hr = Math.floor(m / 60);
    if (hr < 24) return `${hr}h ${pad(m % 60)}m`;
    return `${Math.floor(hr / 24)}d ${hr % 24}h`;
  }
  function fmtClock(ms, withDate = true) {
    const d = new Date(ms);
    const t = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    return withDate ? `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${t}` : t;
  }
  function fmtRate(x) {
    if (x == null || !Number.isFinite(x)) return '–';
    const a = Math.abs(x);
    return a >= 100 ? NUM.format(Math.round(x)) : a >= 10 ? x.toFixed(1) : x.toFixed(2);
  }
  const serverNow = () => Date.now() + model.offset;
  function setOffset(now) { if (typeof now === 'number' && now > 0) model.offset = now - Date.now(); }

  // The recipe's entries by role, in their order.
  function groups(r) {
    const g = new Map();
    for (const e of r.entries || []) {
      if (!g.has(e.role)) g.set(e.role, []);
      g.get(e.role).push(e);
    }
    return g;
  }
  // Exact total of a role (counts), or the entries listed when counts lacks it.
  function total(r, role) {
    if (r.counts && r.counts[role] != null) return r.counts[role];
    return (r.entries || []).filter((e) => e.role === role).length;
  }
  // A key as shown in a card: relative to the recipe's name (full key in data-key and title).
  function relKey(r, key) {
    return key !== r.name && key.startsWith(r.name + '/') ? key.slice(r.name.length + 1) : key;
  }

  // ------------------------------------------------------------ cells, tables, stats
  const td = (text, cls) => h('td', cls, text == null || text === '' ? '–' : text);
  function tdText(text, cls) { const t = td(text, cls); if (text) t.title = text; return t; }
  function tdTtl(e) {
    if (e.lease == null || e.ttl == null) return td('–', 'num dim');
    if (e.ttl < 0) return td('expired', 'num bad');
    const t = td(`${e.ttl} / ${e.granted_ttl ?? '?'} s`, 'num' + (e.ttl <= 2 ? ' warn' : ''));
    t.title = `lease ${e.lease}: ${e.ttl} s left of ${e.granted_ttl ?? '?'} s granted`;
    return t;
  }
  function tdAge(c, ms, exact, future) { const t = h('td', 'num'); t.append(ageSpan(c, ms, exact, future)); return t; }
  // A ticking age (or countdown when `future`), registered on the card: the
  // once-a-second tick rewrites only these spans, on the visible cards.
  function ageSpan(c, ms, exact, future) {
    const s = h('span', 'age');
    if (!ms) { s.textContent = '–'; return s; }
    const tk = [s, ms, exact !== false, !!future];
    c.tickers.push(tk);
    tickOne(tk, serverNow());
    s.title = (future ? 'at ' : 'since ') + fmtClock(ms) + (exact === false ? ' or earlier (older than the dashboard)' : '');
    return s;
  }
  function tickOne([el, ms, exact, future], now) {
    const text = future ? (ms > now ? 'in ' + fmtDur(ms - now) : 'due') : (exact ? '' : '≥ ') + fmtDur(now - ms);
    if (el.textContent !== text) el.textContent = text;
  }
  // Columns of an entries table: [header, header class, (entry, index) => <td>]; falsy ones are left out.
  const colKey = (c, label = 'key') => [label, '', (e) => { const t = h('td', 'mono key', relKey(c.r, e.key)); t.title = e.key; return t; }];
  const colId = (c) => ['id', '', (e) => { const t = h('td', 'mono key', e.id || relKey(c.r, e.key)); t.title = e.key; return t; }];
  const colText = (label, get, cls = 'mono value') => [label, '', (e) => tdText(get(e), cls)];
  const colNum = (label, get) => [label, 'num', (e) => td(get(e), 'num')];
  const colPos = ['#', 'num', (e, i) => td(i + 1, 'num pos')];
  const colLease = ['lease', '', (e) => td(e.lease, 'mono dim')];
  const colTtl = ['TTL', 'num', tdTtl];
  const colAge = (c, label = 'for') => [label, 'num', (e) => tdAge(c, e.since_ms, e.since_exact)];
  const colActions = (buttons) => model.actions && ['', '', (e) => actionCell(buttons(e))];
  // One row per entry, with the attributes tests and actions use.
  function entriesTable(entries, cols, caption) {
    cols = cols.filter(Boolean);
    const wrap = h('div', 'table-wrap'), scroll = h('div', 'scroll'), t = h('table', 'entries');
    const thead = h('thead'), headRow = h('tr'), tbody = h('tbody');
    for (const [label, cls] of cols) headRow.append(h('th', cls, label));
    entries.forEach((e, i) => {
      const tr = h('tr', e.role === 'holder' ? 'holder' : e.instance && e.instance.enabled === false ? 'disabled' : null);
      tr.dataset.role = e.role;
      tr.dataset.key = e.key;
      if (e.role === 'dead_letter') tr.dataset.deadId = e.id;
      for (const col of cols) tr.append(col[2](e, i));
      ROW_ENTRY.set(tr, e);
      tbody.append(tr);
    });
    if (caption) wrap.append(h('div', 'caption', caption));
    thead.append(headRow); t.append(thead, tbody); scroll.append(t); wrap.append(scroll);
    return wrap;
  }
  function actionCell(buttons) {
    const t = h('td', 'actions');
    for (const [action, label] of buttons) {
      const b = h('button', 'btn small' + (action === 'requeue' ? '' : ' danger'), label);
      b.type = 'button';
      b.dataset.action = action;
      t.append(b);
    }
    return t;
  }
  function stat(value, label, cls) {
    const s = h('div', 'stat' + (cls ? ' ' + cls : ''));
    const v = h('div', 'stat-value');
    if (value instanceof Node) v.append(value); else v.textContent = value;
    s.append(v, h('div', 'stat-label', label));
    return s;
  }
  function stats(body, ...items) { const s = h('div', 'stats'); s.append(...items.filter(Boolean)); body.append(s); }
  // The keys a kind's renderer does not show in its own tables.
  const keysTable = (c, entries, caption) => entriesTable(entries, [colKey(c), colText('role', (e) => e.role, 'dim'),
    colText('value', (e) => e.value), colLease, colTtl, colAge(c, 'age')], caption);

  // ------------------------------------------------------------ one renderer per kind
  // Each appends the card's body and returns {roles: the roles it showed, summary: [text]}.
  function renderLock(c, body) {
    const r = c.r, g = groups(r);
    const holders = g.get('holder') || [], waiting = g.get('waiting') || [], rows = holders.concat(waiting);
    const nHold = total(r, 'holder'), nWait = total(r, 'waiting');
    const sem = r.kind === 'semaphore';
    stats(body,
      sem ? stat(`${fmtNum(nHold)} / ${fmtNum(r.permits)}`, 'holders', nHold >= r.permits ? 'warn' : '')
        : stat(nHold ? fmtNum(nHold) : 'free', nHold === 1 ? 'holder' : 'holders', nHold ? '' : 'ok'),
      stat(fmtNum(nWait), 'waiting', nWait ? '' : 'dim'),
      holders[0] && stat(ageSpan(c, holders[0].since_ms, holders[0].since_exact), holders.length > 1 ? 'oldest hold' : 'held for'),
      waiting[0] && stat(ageSpan(c, waiting[0].since_ms, waiting[0].since_exact), 'next in line waiting'));
    chartsInto(c, body);
    // Keys named after their lease (NAME/<lease id in hex>, as the recipes make them): one column for both.
    const keyIsLease = rows.every((e) => e.lease && relKey(r, e.key) === e.lease);
    const position = (e, i) => {
      if (e.role !== 'holder') return td('#' + (i - holders.length + 1), 'num pos');
      const t = td('holder', 'pos');
      t.title = r.kind === 'lock_or_election' ? 'holds the lock, or leads the election' : 'holds it';
      return t;
    };
    if (rows.length) {
      body.append(entriesTable(rows, [['', '', position], colKey(c, keyIsLease ? 'key = lease' : 'key'),
        colNum('token', (e) => fmtNum(e.token)),
        r.kind === 'rwlock' && ['mode', '', (e) => td(e.mode, 'mode-' + e.mode)],
        rows.some((e) => e.value) && colText('value', (e) => e.value),
        !keyIsLease && colLease, colTtl, colAge(c),
        colActions((e) => (e.role === 'holder' ? [['release', 'Release']] : []))]));
    }
    const summary = [sem ? `holders ${fmtNum(nHold)} / ${fmtNum(r.permits)}`
      : holders[0] ? `token ${fmtNum(holders[0].token)}` : 'free'];
    if (nWait) summary.push(`${fmtNum(nWait)} waiting`);
    return { roles: ['holder', 'waiting'], summary };
  }

  function renderQueue(c, body) {
    const r = c.r, g = groups(r), m = r.metrics || {};
    const work = r.kind === 'work_queue';
    const depth = m.depth ?? total(r, 'item');
    const nFlight = m.in_flight ?? total(r, 'in_flight');
    const nDead = m.dead_letters ?? total(r, 'dead_letter');
    stats(body,
      stat(fmtNum(depth), work ? 'pending' : 'depth', 'big'),
      stat(r.oldest ? ageSpan(c, r.oldest.since_ms, r.oldest.exact) : '–', 'oldest item'),
      work && stat(fmtNum(nFlight), 'in flight'),
      work && stat(fmtNum(nDead), 'dead letters', nDead ? 'bad' : 'dim'));
    chartsInto(c, body);
    const items = g.get('item') || [], now = serverNow();
    if (items.length) {
      body.append(entriesTable(items, [colPos, colId(c),
        r.kind === 'priority_queue' && colNum('priority', (e) => e.priority),
        colText('value', (e) => (work ? e.payload : e.value)), colAge(c, 'age'),
        items.some((e) => e.not_before_ms > now) && ['due', 'num', (e) => (e.not_before_ms > now ? tdAge(c, e.not_before_ms, true, true) : td('', 'num dim'))],
      ], `next to serve (${fmtNum(items.length)} of ${fmtNum(depth)})`));
    }
    const flight = work ? (g.get('in_flight') || []).concat(g.get('claim') || []) : [];
    if (flight.length) {
      body.append(entriesTable(flight, [colId(c), colText('claimed by', (e) => e.claimed_by, 'mono'),
        colNum('attempt', (e) => e.deliveries || '–'), colAge(c),
        colText('value', (e) => (e.role === 'claim' ? '(claim only: item not read)' : e.payload))], `in flight (${fmtNum(nFlight)})`));
    }
    const dead = work ? g.get('dead_letter') || [] : [];
    if (dead.length) {
      body.append(entriesTable(dead, [colId(c), colText('reason', (e) => e.reason, 'reason'),
        colNum('attempts', (e) => e.deliveries || '–'), ['dead for', 'num', (e) => tdAge(c, e.dead_since_ms, true)],
        colText('payload', (e) => e.payload), colActions(() => [['requeue', 'Requeue'], ['purge', 'Purge']])],
      `dead letters (${fmtNum(nDead)})`));
    }
    const summary = [`depth ${fmtNum(depth)}`];
    if (work && nFlight) summary.push(`${fmtNum(nFlight)} in flight`);
    if (work && nDead) summary.push(`${fmtNum(nDead)} dead`);
    return { roles: ['item', 'in_flight', 'claim', 'dead_letter'], summary };
  }

  function renderBarrier(c, body) {
    const r = c.r, g = groups(r), has = (role) => g.has(role) || total(r, role) > 0;
    let summary;
    if (r.kind === 'barrier') {
      const gate = (g.get('gate') || [])[0], setBy = (g.get('set_by') || [])[0], closed = has('gate');
      stats(body, stat(closed ? 'set (closed)' : 'open', 'gate', closed ? 'warn' : 'ok'),
        gate && stat(ageSpan(c, gate.since_ms, gate.since_exact), 'set for'),
        setBy && setBy.value && stat(setBy.value, 'set by', 'mono small'));
      summary = [closed ? 'closed' : 'open'];
    } else {
      const n = total(r, 'party'), state = has('gave_up') ? 'gave up' : has('ready') ? 'ready' : 'not ready';
      stats(body, stat(fmtNum(n), n === 1 ? 'party' : 'parties', 'big'),
        stat(state, 'state', { 'gave up': 'bad', ready: 'ok' }[state]));
      summary = [`${fmtNum(n)} ${n === 1 ? 'party' : 'parties'}`, state];
    }
    chartsInto(c, body);
    const parties = g.get('party') || [];
    if (parties.length) {
      body.append(entriesTable(parties, [colPos, colKey(c, 'party'), parties.some((e) => e.value) && colText('value', (e) => e.value),
        colLease, colTtl, colAge(c)]));
    }
    return { roles: ['party'], summary };
  }

  function renderCounter(c, body) {
    const r = c.r, r10 = h('span', null, '–'), r60 = h('span', null, '–');
    c.rates = [[r10, 10000], [r60, 60000]];
    stats(body, stat(fmtNum(r.value), 'value', 'big'), stat(r10, 'per s, last 10 s'), stat(r60, 'per s, last 60 s'));
    chartsInto(c, body);
    updateRates(c);
    return { roles: [], summary: [fmtNum(r.value)] };
  }
  // Rates from the `value` series: (last - first in the window) / time between them.
  function updateRates(c) {
    if (!c.rates) return;
    const vals = (model.series.get(c.id) || {}).value, t = model.times;
    for (const [el, win] of c.rates) {
      let text = '–';
      if (vals) {
        let i1 = vals.length - 1;
        while (i1 >= 0 && vals[i1] == null) i1--;
        if (i1 > 0) {
          let i0 = lowerBound(t, t[i1] - win);
          while (i0 < i1 && vals[i0] == null) i0++;
          const dt = (t[i1] - t[i0]) / 1000;
          if (dt >= win / 2000) text = fmtRate((vals[i1] - vals[i0]) / dt);
        }
      }
      el.textContent = text;
    }
  }

  function renderServices(c, body) {
    const r = c.r, inst = groups(r).get('instance') || [], n = total(r, 'instance');
    const info = (e) => e.instance || {};
    const disabled = inst.filter((e) => info(e).enabled === false).length;
    stats(body, stat(fmtNum(n), 'instances', 'big'), stat(fmtNum(new Set(inst.map((e) => info(e).service)).size), 'services'),
      stat(fmtNum(disabled), 'disabled', disabled ? 'warn' : 'dim'));
    chartsInto(c, body);
    if (inst.length) {
      body.append(entriesTable(inst, [colText('service', (e) => info(e).service, 'mono'), colText('id', (e) => info(e).id, 'mono'),
        colText('address', (e) => info(e).address, 'mono'), colNum('port', (e) => info(e).port),
        ['enabled', '', (e) => (info(e).enabled === false ? td('no', 'warn') : td('yes', 'ok'))],
        colLease, colTtl, colAge(c, 'up for')]));
    }
    return { roles: ['instance'], summary: [`${fmtNum(n)} instances`] };
  }

  function renderKeys(c, body) {
    const keys = (c.r.entries || []).filter((e) => e.role === 'key'), e = keys[0];
    chartsInto(c, body);
    if (keys.length) {
      body.append(entriesTable(keys, [keys.some((k) => k.key !== c.r.name) && colKey(c), colText('value', (k) => k.value),
        colLease, colTtl, colAge(c, 'age')]));
    }
    const summary = e ? [e.value && e.value.slice(0, 40), e.lease && (e.ttl < 0 ? 'expired' : `TTL ${e.ttl} s`)] : [];
    return { roles: ['key'], summary: summary.filter(Boolean) };
  }

  const RENDER = {
    lock_or_election: renderLock, rwlock: renderLock, semaphore: renderLock,
    queue: renderQueue, priority_queue: renderQueue, work_queue: renderQueue,
    barrier: renderBarrier, count_barrier: renderBarrier, double_barrier: renderBarrier,
    count_or_double_barrier: renderBarrier, counter: renderCounter, services: renderServices,
  };

  // ------------------------------------------------------------ a card
  function buildCard(c) {
    const r = c.r;
    c.tickers = []; c.charts = []; c.rates = null;
    const el = h('article', 'card');
    el.dataset.recipeId = r.id;
    el.dataset.kind = r.kind;
    const head = h('header', 'card-head');
    const toggle = h('button', 'toggle');
    toggle.type = 'button';
    toggle.title = 'Collapse / expand';
    toggle.setAttribute('aria-label', 'Collapse or expand ' + r.name);
    const name = h('span', 'name mono', r.name);
    name.title = `${r.name}\n${KIND_LABEL[r.kind] || r.kind}` + (r.revision ? `, read at revision ${r.revision}` : '');
    const summaryEl = h('span', 'summary');
    head.append(toggle, h('span', 'kind', KIND_LABEL[r.kind] || r.kind), name, summaryEl);
    const body = h('div', 'card-body');
    const { roles, summary } = (RENDER[r.kind] || renderKeys)(c, body);
    for (const s of summary) summaryEl.append(h('span', null, s));
    // Keys the renderer did not show: other roles visibly, bookkeeping folded away.
    const shown = new Set(roles);
    const rest = (r.entries || []).filter((e) => !shown.has(e.role));
    const other = rest.filter((e) => !BOOKKEEPING.has(e.role)), books = rest.filter((e) => BOOKKEEPING.has(e.role));
    if (other.length) body.append(keysTable(c, other, 'other keys'));
    if (r.entries_omitted > 0) body.append(h('div', 'omitted', `… and ${fmtNum(r.entries_omitted)} more not listed`));
    if (books.length) {
      const det = h('details', 'details');
      det.open = openDetails.has(c.id);
      det.append(h('summary', null, `details: ${books.length} bookkeeping key${books.length > 1 ? 's' : ''} (${[...new Set(books.map((e) => e.role))].join(', ')})`));
      det.append(keysTable(c, books));
      det.addEventListener('toggle', () => { if (det.open) openDetails.add(c.id); else openDetails.delete(c.id); });
      body.append(det);
    }
    el.append(head, body);
    applyCardClasses(c, el);
    c.el = el;
    EL_CARD.set(el, c);
  }
  function applyCardClasses(c, el = c.el) {
    el.classList.toggle('collapsed', c.collapsed);
    el.querySelector('.toggle').setAttribute('aria-expanded', String(!c.collapsed));
    const p = model.prefixes.get(c.prefix);
    el.classList.toggle('stale', !!(p && p.error));
    el.hidden = !matchesFilter(c);
  }
  function tickCard(c, now) {
    if (c.collapsed) return;
    for (const tk of c.tickers) tickOne(tk, now);
  }
  function refreshLive(c) {
    if (c.collapsed) return;
    tickCard(c, serverNow());
    drawCharts(c);
    updateRates(c);
  }
  function isCollapsed(id, kind) {
    return Object.prototype.hasOwnProperty.call(collapsedStore, id) ? !!collapsedStore[id] : COLLAPSED_BY_DEFAULT.has(kind);
  }
  function loadCollapsed() {
    try { return JSON.parse(localStorage.getItem(STORE_KEY) || '{}') || {}; } catch (_) { return {}; }
  }
  function setCollapsed(c, collapsed) {
    c.collapsed = collapsed;
    if (collapsed === COLLAPSED_BY_DEFAULT.has(c.r.kind)) delete collapsedStore[c.id];
    else collapsedStore[c.id] = collapsed ? 1 : 0;
    try { localStorage.setItem(STORE_KEY, JSON.stringify(collapsedStore)); } catch (_) { /* private mode */ }
    applyCardClasses(c);
    if (!collapsed) refreshLive(c);
  }

  // ------------------------------------------------------------ sections and card order
  function buildSections() {
    const main = document.getElementById('sections');
    for (const def of SECTIONS) {
      const el = h('section', 'section');
      el.dataset.section = def.id;
      const head = h('h2');
      const countEl = h('span', 'count');
      head.append(h('span', null, def.title), countEl);
      const cardsEl = h('div', 'cards');
      el.append(head, cardsEl);
      el.hidden = true;
      main.append(el);
      sections.set(def.id, { def, el, countEl, cardsEl, list: [] });
      for (const k of def.kinds) kindSection.set(k, def.id);
    }
  }
  function lowerBound(arr, x, key = (v) => v) {
    let lo = 0, hi = arr.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (key(arr[mid]) < x) lo = mid + 1; else hi = mid; }
    return lo;
  }
  const byKey = (c) => c.sortKey;
  function updateSectionCount(s) {
    const n = s.list.length;
    let shown = n;
    if (model.filter) shown = s.list.reduce((k, c) => k + (c.el.hidden ? 0 : 1), 0);
    s.countEl.textContent = model.filter ? `${fmtNum(shown)} of ${fmtNum(n)}` : fmtNum(n);
    s.el.hidden = shown === 0;
  }

  // Inserts or replaces one recipe's card; skips the DOM when nothing but the revision changed.
  function upsertRecipe(r, prefix, touched) {
    const saved = r.revision; r.revision = 0;
    const sig = JSON.stringify(r);
    r.revision = saved;
    let c = model.cards.get(r.id);
    if (c && c.sig === sig && c.prefix === prefix) { c.r = r; return; }
    if (!c) {
      const sid = kindSection.get(r.kind) || 'keys';
      c = { id: r.id, prefix, section: sections.get(sid), sortKey: r.name + '\u0000' + r.id, collapsed: isCollapsed(r.id, r.kind) };
      c.r = r; c.sig = sig;
      buildCard(c);
      const list = c.section.list, i = lowerBound(list, c.sortKey, byKey);
      c.section.cardsEl.insertBefore(c.el, list[i] ? list[i].el : null);
      list.splice(i, 0, c);
      model.cards.set(c.id, c);
    } else {
      const old = c.el;
      c.r = r; c.sig = sig; c.prefix = prefix;
      buildCard(c);
      old.replaceWith(c.el);
      io.unobserve(old);
      // Back to where the operator scrolled the card's tables (recorded by onTableScroll: reading
      // scrollTop here would force a layout of the whole page on every update).
      if (c.scrolls) c.el.querySelectorAll('.scroll').forEach((s, i) => { if (c.scrolls[i]) s.scrollTop = c.scrolls[i]; });
      if (visible.has(c)) drawCharts(c);
    }
    io.observe(c.el);
    touched.add(c.section);
  }
  function onTableScroll(ev) {
    const s = ev.target;
    if (!s.classList || !s.classList.contains('scroll')) return;
    const c = EL_CARD.get(s.closest('.card'));
    if (c) (c.scrolls || (c.scrolls = []))[[...c.el.querySelectorAll('.scroll')].indexOf(s)] = s.scrollTop;
  }
  function removeRecipe(id, touched) {
    const c = model.cards.get(id);
    if (!c) return;
    const list = c.section.list;
    const i = lowerBound(list, c.sortKey, byKey);
    if (list[i] === c) list.splice(i, 1);
    io.unobserve(c.el);
    c.el.remove();
    visible.delete(c);
    model.cards.delete(id);
    touched.add(c.section);
  }

  // ------------------------------------------------------------ charts
  function chartsInto(c, body) {
    const m = c.r.metrics || {};
    const keys = Object.keys(m).sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : 1));
    if (!keys.length) return;
    const box = h('div', 'charts');
    for (const metric of keys) {
      const wrap = h('div', 'chart');
      const label = h('div', 'chart-head');
      const cur = h('span', 'cur'), max = h('span', 'max');
      label.append(h('span', 'chart-name', METRIC_LABEL[metric] || metric), cur, max);
      const s = svg('svg', { class: 'spark', viewBox: '0 0 300 40', preserveAspectRatio: 'none', role: 'img' });
      const area = svg('path', { class: 'area' }), line = svg('path', { class: 'line' });
      s.append(area, line);
      SPARK.set(s, { card: c, metric });
      wrap.append(label, s);
      box.append(wrap);
      c.charts.push({ metric, svg: s, area, line, cur, max });
    }
    body.append(box);
  }
  const rank = (k) => { const i = METRIC_ORDER.indexOf(k); return i < 0 ? 99 : i; };
  // Redraws a card's sparklines from the shared series: x = the last
  // history_seconds of server time, y = 0 .. max in that window.
  function drawCharts(c) {
    if (!c.charts.length || c.collapsed) return;
    const t = model.times, t1 = serverNow(), t0 = t1 - model.historyMs, W = 300, H = 40;
    const start = lowerBound(t, t0);
    const ser = model.series.get(c.id) || {};
    for (const ch of c.charts) {
      const vals = ser[ch.metric];
      // "now" is the card's own figure (what its big numbers say), else the last sample.
      const own = c.r.metrics[ch.metric];
      let max = 0, last = own;
      if (vals) for (let i = start; i < vals.length; i++) if (vals[i] != null) { if (vals[i] > max) max = vals[i]; if (own == null) last = vals[i]; }
      if (last > max) max = last;
      const top = max > 0 ? max : 1;
      // One path for the line; the area under it is closed per run of values (null = gap).
      let line = '', area = '', run = '', firstX = null, lastX = null;
      const flush = () => { if (firstX != null) area += `M${firstX},${H}${run}L${lastX},${H}Z`; firstX = null; run = ''; };
      if (vals) {
        for (let i = start; i < vals.length; i++) {
          const v = vals[i];
          if (v == null || (i > start && t[i] - t[i - 1] > 2.5 * model.stepMs)) flush();
          if (v == null) continue;
          const x = (((t[i] - t0) / (t1 - t0)) * W).toFixed(1), y = (H - 1 - (v / top) * (H - 3)).toFixed(1);
          line += `${firstX == null ? 'M' : 'L'}${x},${y}`;
          if (firstX == null) firstX = x;
          run += `L${x},${y}`;
          lastX = x;
        }
        flush();
      }
      ch.line.setAttribute('d', line);
      ch.area.setAttribute('d', area);
      ch.cur.textContent = 'now ' + fmtNum(last);
      ch.max.textContent = 'max ' + fmtNum(max);
      ch.svg.setAttribute('aria-label', `${METRIC_LABEL[ch.metric] || ch.metric}: now ${fmtNum(last)}, max ${fmtNum(max)} over the last ${Math.round(model.historyMs / 60000)} min`);
    }
  }
  // Hover: the value at the time under the pointer.
  function onSparkHover(ev) {
    const tip = document.getElementById('tooltip');
    const s = ev.target.closest && ev.target.closest('svg.spark');
    const info = s && SPARK.get(s);
    if (!info) { tip.hidden = true; return; }
    const box = s.getBoundingClientRect(), t1 = serverNow(), t0 = t1 - model.historyMs;
    const at = t0 + ((ev.clientX - box.left) / box.width) * (t1 - t0);
    const t = model.times, vals = (model.series.get(info.card.id) || {})[info.metric];
    if (!vals || !t.length) { tip.hidden = true; return; }
    let i = Math.min(lowerBound(t, at), t.length - 1);
    if (i > 0 && at - t[i - 1] < t[i] - at) i--;
    tip.textContent = `${fmtClock(t[i], false)}  ${METRIC_LABEL[info.metric] || info.metric} ${vals[i] == null ? 'no value' : fmtNum(vals[i])}`;
    tip.hidden = false;
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - tip.offsetWidth - 8) + 'px';
    tip.style.top = ev.clientY + 14 + 'px';
  }

  // ------------------------------------------------------------ series
  function applyHistory(msg) {
    model.times = (msg.t || []).slice();
    model.series = new Map();
    for (const [id, s] of Object.entries(msg.series || {})) {
      const copy = {};
      for (const [k, arr] of Object.entries(s)) copy[k] = arr.slice(0, model.times.length);
      model.series.set(id, copy);
    }
    for (const c of visible) { drawCharts(c); updateRates(c); }
  }
  function applySample(msg) {
    const t = msg.t, times = model.times;
    if (typeof t !== 'number' || (times.length && t <= times[times.length - 1])) return;
    times.push(t);
    const n = times.length;
    for (const [id, vals] of Object.entries(msg.values || {})) {
      let s = model.series.get(id);
      if (!s) model.series.set(id, (s = {}));
      for (const [k, v] of Object.entries(vals)) {
        if (!s[k]) s[k] = new Array(n - 1).fill(null);
        s[k].push(v);
      }
    }
    for (const s of model.series.values()) for (const k in s) while (s[k].length < n) s[k].push(null);
    trimSeries(t);
    for (const c of visible) { drawCharts(c); updateRates(c); }
  }
  // Drops points older than the window, in batches (one splice per 30 points).
  function trimSeries(now) {
    const k = lowerBound(model.times, now - model.historyMs);
    if (k < 30) return;
    model.times.splice(0, k);
    for (const [id, s] of model.series) {
      let any = model.cards.has(id);
      for (const m in s) { s[m].splice(0, k); any = any || s[m].some((v) => v != null); }
      if (!any) model.series.delete(id); // a recipe gone for the whole window
    }
  }

  // ------------------------------------------------------------ prefixes, banners, top bar
  function prefixState(name) {
    let p = model.prefixes.get(name);
    if (!p) {
      p = { name, revision: 0, error: null, stoppedAt: '', ids: new Set(), synced: false, banner: h('div', 'prefix-banners'), chip: h('span', 'chip') };
      p.chip.textContent = name;
      document.getElementById('banners').append(p.banner);
      document.getElementById('prefixes').append(p.chip);
      model.prefixes.set(name, p);
    }
    return p;
  }
  function renderBanner(p) {
    p.chip.className = 'chip mono' + (p.error ? ' error' : p.stoppedAt ? ' warn' : '');
    p.chip.title = `${p.name}: revision ${p.revision}, ${p.ids.size} recipes${p.error ? '\n' + p.error : ''}`;
    const sig = [p.error, p.stoppedAt, p.synced, p.ids.size > 0, p.error && p.revision].join('\u0000');
    if (sig === p.bannerSig) return;
    p.bannerSig = sig;
    const b = p.banner;
    b.replaceChildren();
    const line = (cls, ...parts) => {
      const d = h('div', 'banner ' + cls);
      for (const x of parts) d.append(x instanceof Node ? x : document.createTextNode(x));
      b.append(d);
    };
    if (p.error) {
      line('error', h('strong', 'mono', p.name), ': ', h('span', 'mono', p.error),
        p.ids.size ? ` — showing what was last read (revision ${fmtNum(p.revision)}), marked stale` : '');
    }
    if (p.stoppedAt) line('warn', `showing part of ${p.name}: stopped at `, h('span', 'mono', p.stoppedAt), ' (the server reads a bounded number of loose keys)');
    if (!p.synced) line('info', `reading ${p.name}…`);
    else if (!p.ids.size && !p.error) line('info', `No recipes under ${p.name} yet`);
  }
  function setPrefixError(p, error, touched) {
    const was = !!p.error;
    p.error = error || null;
    if (was !== !!p.error) for (const id of p.ids) { const c = model.cards.get(id); if (c) { applyCardClasses(c); touched.add(c.section); } }
  }
  function dropPrefix(p) {
    const touched = new Set();
    for (const id of p.ids) removeRecipe(id, touched);
    p.banner.remove(); p.chip.remove();
    model.prefixes.delete(p.name);
    touched.forEach(updateSectionCount);
  }
  function recordApplied(msg) {
    D.applied.push({ revision: msg.revision, prefix: msg.prefix, at: performance.timeOrigin + performance.now() });
    if (D.applied.length > APPLIED_MAX) D.applied.splice(0, D.applied.length - APPLIED_MAX);
    if (msg.revision > model.maxRevision) {
      model.maxRevision = msg.revision;
      document.body.dataset.revision = String(msg.revision);
      document.getElementById('revision').textContent = 'rev ' + fmtNum(msg.revision);
    }
  }

  // ------------------------------------------------------------ messages
  function onHello(msg) {
    setOffset(msg.now);
    model.historyMs = (msg.history_seconds || 600) * 1000;
    model.stepMs = msg.step_ms || 1000;
    const actionsChanged = model.actions !== !!msg.actions;
    model.actions = !!msg.actions;
    const badge = document.getElementById('mode-badge');
    badge.hidden = false;
    badge.textContent = model.actions ? 'actions enabled' : 'read-only';
    badge.className = 'badge ' + (model.actions ? 'actions' : 'readonly');
    badge.title = model.actions ? 'Started with --allow-actions: requeue, purge and release are available'
      : 'Started without --allow-actions: this page only reads';
    document.getElementById('version').textContent = msg.version ? 'v' + msg.version : '';
    // A (re)connection: every prefix waits for its `state`, which replaces it.
    const names = new Set(msg.prefixes || []);
    for (const p of [...model.prefixes.values()]) if (!names.has(p.name)) dropPrefix(p);
    for (const name of names) { const p = prefixState(name); p.synced = false; renderBanner(p); }
    if (actionsChanged) for (const c of model.cards.values()) { c.sig = null; }
  }
  function onState(msg) {
    setOffset(msg.now);
    const p = prefixState(msg.prefix), touched = new Set();
    const recipes = msg.recipes || [];
    p.revision = msg.revision;
    p.stoppedAt = msg.stopped_at || '';
    // An error with nothing read keeps the last recipes shown (stale); otherwise this replaces them.
    if (!(msg.error && !recipes.length)) {
      const ids = new Set(recipes.map((r) => r.id));
      for (const id of p.ids) if (!ids.has(id)) removeRecipe(id, touched);
      p.ids = ids;
    }
    setPrefixError(p, msg.error, touched);
    for (const r of recipes) upsertRecipe(r, p.name, touched);
    p.synced = true;
    renderBanner(p);
    touched.forEach(updateSectionCount);
    recordApplied(msg);
    if (D.firstRender == null) D.firstRender = performance.now();
  }
  function onUpdate(msg) {
    setOffset(msg.now);
    const p = prefixState(msg.prefix), touched = new Set();
    if (msg.revision > p.revision) p.revision = msg.revision;
    setPrefixError(p, msg.error, touched);
    for (const id of msg.remove || []) { removeRecipe(id, touched); p.ids.delete(id); }
    for (const r of msg.upsert || []) { upsertRecipe(r, p.name, touched); p.ids.add(r.id); }
    renderBanner(p);
    touched.forEach(updateSectionCount);
    recordApplied(msg);
  }
  const HANDLERS = {
    hello: onHello, state: onState, update: onUpdate,
    history: (m) => { setOffset(m.now); applyHistory(m); },
    sample: (m) => { setOffset(m.now ?? m.t); applySample(m); },
  };

  // ------------------------------------------------------------ connection
  let source = null, downSince = null, retryMs = 2000;
  function connect() {
    source = new EventSource('events');
    source.addEventListener('open', () => { D.connected = true; downSince = null; retryMs = 2000; showConn(); });
    source.addEventListener('error', () => {
      D.connected = false;
      if (downSince == null) downSince = Date.now();
      // EventSource retries by itself unless the server answered with an error status: then we do.
      if (source.readyState === EventSource.CLOSED) {
        source.close();
        setTimeout(connect, retryMs);
        retryMs = Math.min(retryMs * 2, 30000);
      }
      showConn();
    });
    for (const name of Object.keys(HANDLERS)) {
      source.addEventListener(name, (ev) => {
        let msg;
        try { msg = JSON.parse(ev.data); } catch (e) { console.warn(`dashboard: ${name}: bad JSON`, e); return; }
        try { HANDLERS[name](msg); } catch (e) { console.error(`dashboard: handling ${name}`, e); }
      });
    }
  }
  function showConn() {
    const el = document.getElementById('conn'), text = document.getElementById('conn-text');
    const state = D.connected ? 'live' : downSince == null ? 'connecting' : 'reconnecting';
    el.className = 'conn ' + state;
    text.textContent = state === 'live' ? 'live' : state === 'connecting' ? 'connecting…'
      : `reconnecting since ${fmtClock(downSince, false)} (${fmtDur(Date.now() - downSince)})`;
    document.body.classList.toggle('disconnected', state === 'reconnecting');
  }

  // ------------------------------------------------------------ actions
  let pending = null; // {body, label} while the dialog is open
  function onActionClick(btn) {
    const cardEl = btn.closest('.card'), tr = btn.closest('tr');
    const c = cardEl && model.cards.get(cardEl.dataset.recipeId), e = tr && ROW_ENTRY.get(tr);
    if (!c || !e) return;
    const r = c.r, action = btn.dataset.action;
    let body, text, label;
    if (action === 'release') {
      body = { action, prefix: c.prefix, name_b64: r.name_b64, key_b64: e.key_b64, create_revision: e.create_revision };
      text = `Release ${r.name}: delete ${e.key} (token ${e.token}) — its holder loses the ${r.kind === 'semaphore' ? 'permit' : 'lock'} at once`;
      label = `release ${e.key}`;
    } else {
      body = { action, prefix: c.prefix, name_b64: r.name_b64, id: e.id };
      text = action === 'requeue'
        ? `Requeue dead letter ${e.id} of ${r.name}: it goes back to the queue's pending items`
        : `Purge dead letter ${e.id} of ${r.name}: it is deleted for good, with its payload and reason`;
      label = `${action} ${e.id} of ${r.name}`;
    }
    pending = { body, label };
    document.getElementById('confirm-title').textContent = action[0].toUpperCase() + action.slice(1) + '?';
    document.getElementById('confirm-text').textContent = text;
    document.getElementById('confirm-action').textContent = action[0].toUpperCase() + action.slice(1);
    const dlg = document.getElementById('confirm-dialog');
    dlg.showModal();
    document.getElementById('cancel-action').focus();
  }
  async function runAction(p) {
    let ok = false, text;
    try {
      const res = await fetch('api/action', { // relative: works behind a proxy's sub-path too
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Etcd-Recipes-Action': '1' },
        body: JSON.stringify(p.body),
      });
      let ans = null;
      try { ans = await res.json(); } catch (_) { /* not JSON */ }
      ok = !!(res.ok && ans && ans.ok);
      text = ok ? ans.message || 'done' : `${res.status === 200 ? '' : 'HTTP ' + res.status + ': '}${(ans && ans.error) || res.statusText || 'failed'}`;
    } catch (e) {
      text = 'request failed: ' + e.message;
    }
    logAction(ok, p.label, text);
  }
  function logAction(ok, label, text) {
    const log = document.getElementById('action-log');
    const li = h('li', ok ? 'ok' : 'failed');
    li.append(h('span', 'time', fmtClock(Date.now(), false)), h('span', 'what mono', label), h('span', 'msg', text));
    log.prepend(li);
    while (log.children.length > 10) log.lastChild.remove();
    document.getElementById('action-panel').hidden = false;
  }

  // ------------------------------------------------------------ filter, events, start
  function matchesFilter(c) { return !model.filter || c.r.name.toLowerCase().includes(model.filter); }
  function applyFilter(value) {
    model.filter = value.trim().toLowerCase();
    for (const c of model.cards.values()) c.el.hidden = !matchesFilter(c);
    sections.forEach(updateSectionCount);
    history.replaceState(null, '', model.filter ? '#q=' + encodeURIComponent(value.trim()) : location.pathname);
  }

  const io = new IntersectionObserver((entries) => {
    for (const en of entries) {
      const c = EL_CARD.get(en.target);
      if (!c || c.el !== en.target) continue;
      if (!en.isIntersecting) visible.delete(c);
      else if (!visible.has(c)) { visible.add(c); refreshLive(c); }
    }
  }, { rootMargin: '400px 0px' });

  function start() {
    buildSections();
    const main = document.getElementById('sections');
    main.addEventListener('click', (ev) => {
      const btn = ev.target.closest('button');
      if (btn && btn.dataset.action) { onActionClick(btn); return; }
      const head = ev.target.closest('.card-head');
      // The header toggles the card, unless the operator is selecting its text.
      if (head && (btn || !String(window.getSelection()).length)) {
        const c = EL_CARD.get(head.parentElement);
        if (c) setCollapsed(c, !c.collapsed);
      }
    });
    main.addEventListener('mousemove', onSparkHover);
    main.addEventListener('scroll', onTableScroll, true); // scroll does not bubble: capture
    main.addEventListener('mouseleave', () => { document.getElementById('tooltip').hidden = true; });
    const dlg = document.getElementById('confirm-dialog');
    document.getElementById('cancel-action').addEventListener('click', () => { pending = null; dlg.close(); });
    document.getElementById('confirm-action').addEventListener('click', () => {
      const p = pending;
      pending = null;
      dlg.close();
      if (p) runAction(p);
    });
    dlg.addEventListener('close', () => { pending = null; });
    document.getElementById('action-close').addEventListener('click', () => { document.getElementById('action-panel').hidden = true; });
    const filter = document.getElementById('filter');
    const q = new URLSearchParams(location.hash.slice(1)).get('q');
    if (q) { filter.value = q; model.filter = q.trim().toLowerCase(); }
    let timer = 0; // with thousands of cards, wait for a pause in the typing
    filter.addEventListener('input', () => {
      clearTimeout(timer);
      if (model.cards.size < 1500) applyFilter(filter.value);
      else timer = setTimeout(() => applyFilter(filter.value), 150);
    });
    setInterval(() => {
      const now = serverNow();
      for (const c of visible) tickCard(c, now);
      if (!D.connected) showConn();
    }, 1000);
    showConn();
    connect();
  }
  start();
})();
