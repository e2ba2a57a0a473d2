// Verdict's web console: plain ES module, no framework, no build step. Pages are chosen by the URL's hash (#cluster,
// #transactions, #history, #participants, #tcc, #sagas, #leases, #charts, #txn/<id>, #saga/<id>); the data comes from
// the node's JSON API (docs/console.md) and is polled every second. Every value is written with textContent, never as
// HTML, so nothing a participant or a client sent can run in the page.

const POLL_MS = 1000;
const main = document.getElementById('main');
const statusLine = document.getElementById('status');
let timer = null;
let generation = 0;

/** An element with attributes and children (strings become text nodes). */
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') e.textContent = String(v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat())
    if (c !== null && c !== undefined) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

class ApiError extends Error {
  constructor(message, data = null) {
    super(message);
    this.data = data;
  }
}

/** GET or POST to the API; throws ApiError with the server's one-line reason, or why the node could not be reached. */
async function api(path, body) {
  let res;
  try {
    res = await fetch(
      path,
      body === undefined
        ? { cache: 'no-store' }
        : { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) },
    );
  } catch (err) {
    throw new ApiError(`this node does not answer (${err.message}); it may be down`);
  }
  let data = null;
  try {
    data = await res.json();
  } catch {
    throw new ApiError(`the node answered ${res.status} without JSON`);
  }
  if (!res.ok) throw new ApiError(data?.error ?? `the node answered ${res.status}`, data);
  return data;
}

const time = (ms) =>
  ms > 0 ? new Date(ms).toLocaleTimeString([], { hour12: false }) + '.' + String(ms % 1000).padStart(3, '0') : '—';
function age(ms) {
  if (ms < 1000) return `${ms} ms`;
  const s = Math.floor(ms / 1000);
  if (s < 120) return `${s} s`;
  const m = Math.floor(s / 60);
  return m < 120 ? `${m} min` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

/**
 * A link to the leader's console at `hash`, from what this node knows of it
 * (`ref`: leaderId, address, consoleUrl); plain text when its console's
 * address is unknown. A wildcard host in the URL is replaced by the host this
 * page was opened by.
 */
function leaderLink(ref, hash, text) {
  if (!ref || !ref.leaderId) return el('span', { class: 'muted', text: 'no leader is known yet' });
  if (!ref.consoleUrl)
    return el('span', {
      text: `${text ?? `the leader, ${ref.leaderId}`} (${ref.address}; its console's address is not known here)`,
    });
  const u = new URL(ref.consoleUrl);
  if (u.hostname === '0.0.0.0' || u.hostname === '[::]') u.hostname = location.hostname;
  u.hash = hash;
  return el('a', { href: u.href, 'data-leader-link': ref.leaderId, text: text ?? `the leader, ${ref.leaderId}` });
}

/** A forgotten decision keeps no time (its age reads 0): shown as unknown rather than as new. */
const ageOf = (t) => (t.phase === 'decided' && t.ageMs === 0 ? '—' : age(t.ageMs));

/**
 * With decision groups (the answer's items carry `group`): a "group" column after the first, else the table as it is.
 */
function withGroup(items, headers, rows) {
  if (!items.some((x) => typeof x.group === 'number')) return [headers, rows];
  return [
    [headers[0], 'group', ...headers.slice(1)],
    rows.map((row, i) => [row[0], String(items[i].group ?? ''), ...row.slice(1)]),
  ];
}

function table(caption, headers, rows, empty) {
  if (rows.length === 0) return el('p', { class: 'muted', text: empty });
  return el(
    'table',
    {},
    el('caption', { text: caption }),
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        headers.map((h) => el('th', { scope: 'col', text: h })),
      ),
    ),
    el(
      'tbody',
      {},
      rows.map((r) =>
        el(
          'tr',
          {},
          r.map((c) => el('td', {}, c)),
        ),
      ),
    ),
  );
}

function message(kind, text) {
  return el('div', { class: `message ${kind}`, role: kind === 'error' ? 'alert' : 'status', text });
}

function setStatus(text, error = false) {
  statusLine.textContent = text;
  statusLine.className = error ? 'error' : '';
}

// ---- pages ----------------------------------------------------------------

const pages = {
  async cluster(view, state) {
    if (!state.data) {
      state.data = el('div');
      state.msg = el('div');
      view.replaceChildren(el('h2', { text: 'Cluster' }), state.msg, state.data);
    }
    const c = await api('/api/cluster');
    document.getElementById('whoami').textContent = `node ${c.nodeId} · cluster ${c.clusterId} · Verdict ${c.version}`;
    const summary = el(
      'ul',
      { class: 'summary', 'aria-label': 'This node' },
      [
        ['role', c.role],
        ['leader', c.leaderId || 'none known'],
        ['term', c.term],
        ['commit index', c.commitIndex],
        ['applied index', c.appliedIndex],
        ['in flight', c.transactions.inFlight],
        ['unacked', c.transactions.unacked],
        ['participants', c.participants],
      ].map(([k, v]) =>
        // Leader-only figures on a follower: never a misleading 0, a link to where they are known.
        v === null
          ? el(
              'li',
              {},
              el(
                'b',
                { 'data-field': k.replace(/ /g, '-'), class: 'elsewhere' },
                leaderLink(c.leader, '#cluster', 'on the leader'),
              ),
              k,
            )
          : el('li', {}, el('b', { 'data-field': k.replace(/ /g, '-'), text: v }), k),
      ),
    );
    const isLeader = c.role === 'leader';
    const rows = c.members.map((m) => {
      const h = m.health;
      const health =
        h === null
          ? el('span', { class: 'muted', text: 'not probed yet' })
          : h.up
            ? el('span', { class: 'up', text: 'up' })
            : el('span', { class: 'down', text: `down: ${h.error}` });
      const role = m.leader ? 'leader' : h?.up ? h.role : '—';
      // Offered only where it can succeed (on the leader, to a voter that is up); otherwise why not, on hover.
      const act = m.makeLeader.offered
        ? el('button', {
            type: 'button',
            onclick: () => transfer(state.msg, m.id),
            'aria-label': `Transfer leadership to ${m.id}`,
            text: 'make leader',
          })
        : isLeader && !m.self
          ? el('span', { class: 'muted small', 'data-no-action': m.id, text: `no transfer: ${m.makeLeader.why}` })
          : '';
      return [
        el('span', { 'data-node': m.id, text: m.self ? `${m.id} (this node)` : m.id }),
        m.address,
        role,
        h?.up ? h.term : '—',
        h?.up ? h.commitIndex : '—',
        h?.up ? h.appliedIndex : '—',
        h?.up && h.version ? h.version : '—',
        m.lag === null ? '—' : String(m.lag),
        health,
        act,
      ];
    });
    const changes = [...c.leaderChanges].reverse().map((x) => [time(x.atMs), String(x.term), x.leaderId || 'election']);
    state.data.replaceChildren(
      summary,
      el('p', {
        class: c.actions.allowed ? 'muted' : 'note',
        text: `Actions: ${c.actions.allowed ? 'allowed' : 'refused'} — ${c.actions.why}.`,
      }),
      isLeader
        ? ''
        : el(
            'p',
            { class: 'note', 'data-note': 'follower' },
            `Node ${c.nodeId} is a follower: leader transfers, resolves and the figures in flight and unacked are on `,
            leaderLink(c.leader, '#cluster'),
            '.',
          ),
      table(
        `Members as seen from ${c.nodeId}; replication lag is known to the leader only`,
        ['node', 'address', 'role', 'term', 'commit', 'applied', 'version', 'lag (entries)', 'health', ''],
        rows,
        'no members',
      ),
      el('h2', { text: 'Leader changes' }),
      table(`Leaders node ${c.nodeId} has seen, newest first`, ['at', 'term', 'leader'], changes, 'none seen yet'),
      // A cluster of more than one decision group: each group's leader, term and indexes on this node.
      c.groups?.length > 1 ? el('h2', { text: 'Decision groups' }) : '',
      c.groups?.length > 1
        ? table(
            `Decision groups as seen from ${c.nodeId}; in flight and unacked above are summed over the groups it leads`,
            ['group', 'leader', 'term', 'commit', 'applied', 'in flight', 'unacked'],
            c.groups.map((g) => [
              String(g.group),
              g.leaderId || 'election',
              String(g.term),
              String(g.commitIndex),
              String(g.appliedIndex),
              // A group's in-flight and unacked figures are its leader's: elsewhere the row says where.
              g.inFlight === null ? `on ${g.leaderId || 'its leader'}` : String(g.inFlight),
              g.unacked === null ? `on ${g.leaderId || 'its leader'}` : String(g.unacked),
            ]),
            'none',
          )
        : '',
    );
  },

  async transactions(view, state) {
    state.filter ??= 'in-flight';
    if (!state.form) {
      const select = el(
        'select',
        { id: 'txn-filter', name: 'filter' },
        ['in-flight', 'in-doubt', 'unacked', 'heuristic', 'all'].map((f) =>
          el('option', { value: f, selected: f === state.filter, text: f }),
        ),
      );
      select.addEventListener('change', () => {
        state.filter = select.value;
        refresh();
      });
      const input = el('input', {
        id: 'txn-search',
        name: 'id',
        type: 'search',
        autocomplete: 'off',
        spellcheck: 'false',
      });
      state.form = el(
        'form',
        {
          role: 'search',
          onsubmit: (e) => {
            e.preventDefault();
            const id = input.value.trim();
            if (id !== '') location.hash = `#txn/${encodeURIComponent(id)}`;
          },
        },
        el('label', { for: 'txn-filter' }, 'Show', select),
        el('label', { for: 'txn-search' }, 'Find a transaction by id', input),
        el('button', { type: 'submit', text: 'Find' }),
      );
      state.body = el('div');
      view.replaceChildren(el('h2', { text: 'Transactions' }), state.form, state.body);
    }
    const r = await api(`/api/transactions?filter=${encodeURIComponent(state.filter)}&limit=200`);
    const rows = r.transactions.map((t) => [
      el('a', { href: `#txn/${encodeURIComponent(t.txnId)}`, text: t.txnId }),
      t.phase,
      t.outcome,
      ageOf(t),
      t.participants
        .map(
          (p) =>
            `${p.id}${p.vote ? ` ${p.vote}` : ''}${t.phase === 'delivering' ? (p.acked ? ' acked' : ' unacked') : ''}`,
        )
        .join(', '),
      t.decisionIndex > 0 ? String(t.decisionIndex) : '—',
      [...t.heuristics.map((h) => h.kind), ...t.resolutions.map((x) => `resolved by ${x.operator}`)].join('; '),
    ]);
    state.body.replaceChildren(
      r.note
        ? el(
            'p',
            { class: 'note' },
            r.note,
            r.leaderRef ? ['. Open ', leaderLink(r.leaderRef, '#transactions'), '.'] : '',
          )
        : '',
      table(
        `${r.filter} transactions on ${r.nodeId}, oldest first`,
        ...withGroup(
          r.transactions,
          ['id', 'phase', 'outcome', 'age', 'participants', 'decision index', 'heuristics / resolutions'],
          rows,
        ),
        `no ${r.filter} transactions`,
      ),
    );
  },

  async participants(view) {
    const r = await api('/api/participants');
    const state = (p) => {
      if (p.state === 'on the leader') return leaderLink(r.leaderRef, '#participants', 'on the leader');
      // Asked and not answering: a stopped process keeps its TCP connection, so this, not "connected", is the truth.
      if (p.state === 'silent')
        return el('span', {
          class: 'down',
          'data-state': 'silent',
          text: `silent for ${age(p.silentForMs)} (asked at ${time(p.unansweredSinceAtMs)}, no answer since)`,
        });
      return el('span', {
        class: p.state === 'connected' ? 'up' : p.state === 'down' ? 'down' : '',
        'data-state': p.state,
        text: p.state,
      });
    };
    const rows = r.participants.map((p) => [
      p.id,
      p.endpoint,
      p.lastSeenAtMs === null
        ? leaderLink(r.leaderRef, '#participants', 'on the leader')
        : p.lastSeenAtMs > 0
          ? `${time(p.lastSeenAtMs)} (${age(Math.max(0, r.nowMs - p.lastSeenAtMs))} ago)`
          : 'not since this node leads',
      p.inDoubt === null ? '—' : String(p.inDoubt),
      state(p),
      p.kind,
      time(p.registeredAtMs),
    ]);
    view.replaceChildren(
      el('h2', { text: 'Participants' }),
      r.note ? el('p', { class: 'note' }, r.note, ': ', leaderLink(r.leaderRef, '#participants')) : '',
      table(
        `Registered participants, as node ${r.nodeId} sees them`,
        ['id', 'address', 'last seen', 'in doubt', 'state', 'resource kind', 'registered'],
        rows,
        'no participant is registered',
      ),
      el('p', {
        class: 'muted',
        text: `A participant is shown silent when it has answered nothing asked of it for ${age(r.silentAfterMs)}.`,
      }),
      el(
        'p',
        { class: 'muted' },
        'The reserves TCC participants hold are on ',
        el('a', { href: '#tcc', text: 'TCC reserves' }),
        '.',
      ),
    );
  },

  async txn(view, state, id) {
    if (!state.body) {
      state.body = el('div');
      state.msg = el('div');
      const reason = el('textarea', { id: 'resolve-reason', name: 'reason', rows: 2, required: true });
      const operator = el('input', { id: 'resolve-operator', name: 'operator', autocomplete: 'name' });
      const outcome = (v) =>
        el(
          'label',
          {},
          el('input', { type: 'radio', name: 'outcome', value: v, checked: v === 'abort' }),
          v.toUpperCase(),
        );
      const form = el(
        'form',
        {
          'aria-label': 'Resolve this transaction',
          novalidate: true,
          onsubmit: async (e) => {
            e.preventDefault();
            const chosen = form.querySelector('input[name=outcome]:checked')?.value;
            try {
              const r = await api(`/api/transactions/${encodeURIComponent(id)}/resolve`, {
                outcome: chosen,
                reason: reason.value,
                operator: operator.value,
              });
              state.msg.replaceChildren(
                message(
                  'ok',
                  `${r.decided ? 'Decided' : 'Already decided so; recorded'}: ${r.outcome} at log index ${r.decisionIndex}, by ${r.operator}`,
                ),
              );
            } catch (err) {
              state.msg.replaceChildren(message('error', `Refused: ${err.message}`));
            }
          },
        },
        el('fieldset', {}, el('legend', { text: 'Outcome' }), outcome('abort'), outcome('commit')),
        el('label', { for: 'resolve-reason' }, 'Reason (recorded in the log)', reason),
        el('label', { for: 'resolve-operator' }, 'Your name (optional)', operator),
        el('button', { type: 'submit', text: 'Resolve' }),
      );
      state.resolveBox = el('div', { hidden: true }, el('h2', { text: 'Resolve' }), form);
      state.resolveWhy = el('p', { class: 'muted', 'data-note': 'resolve' });
      view.replaceChildren(
        el('h2', {}, 'Transaction ', el('code', { text: id })),
        el('p', {}, el('a', { href: '#transactions', text: '← all transactions' })),
        state.body,
        state.resolveBox,
        state.resolveWhy,
        state.msg,
      );
    }
    let r;
    try {
      r = await api(`/api/transactions/${encodeURIComponent(id)}`);
    } catch (err) {
      state.body.replaceChildren(message('error', err.message));
      state.resolveBox.hidden = true;
      // A follower knows no transaction in flight: the leader does.
      const ref = err.data?.leaderRef;
      state.resolveWhy.replaceChildren(
        ...(ref
          ? [
              'No resolve here: a transaction in flight is known to the leader — ',
              leaderLink(ref, `#txn/${encodeURIComponent(id)}`, `this transaction on ${ref.leaderId}`),
              '.',
            ]
          : []),
      );
      return;
    }
    const t = r.transaction;
    const h = r.history;
    // The form only where a resolve can succeed: on the leader, for a transaction not decided yet.
    state.resolveBox.hidden = !r.actions.resolve.offered;
    state.resolveWhy.replaceChildren(
      ...(r.actions.resolve.offered
        ? []
        : r.leader
          ? [`No resolve here: ${r.actions.resolve.why}.`]
          : [
              `No resolve here: ${r.actions.resolve.why} — `,
              leaderLink(r.leaderRef, `#txn/${encodeURIComponent(id)}`, `this transaction on ${r.leaderRef.leaderId}`),
              '.',
            ]),
    );
    const facts = t
      ? el(
          'ul',
          { class: 'summary', 'aria-label': 'Transaction' },
          [
            ['outcome', t.outcome],
            ['phase', t.phase],
            ['decision index', t.decisionIndex || '—'],
            ['age', ageOf(t)],
          ].map(([k, v]) => el('li', {}, el('b', { 'data-field': k.replace(/ /g, '-'), text: v }), k)),
        )
      : h
        ? el(
            'ul',
            { class: 'summary', 'aria-label': 'Transaction, from the history' },
            [
              ['outcome', h.outcome === 'commit' ? 'committed' : h.outcome === 'abort' ? 'aborted' : 'unknown'],
              ['decided at', time(h.decidedAtMs)],
              ['decision index', h.decisionIndex || '—'],
              ['every ACK by', h.forgottenAtMs ? time(h.forgottenAtMs) : '—'],
            ].map(([k, v]) => el('li', {}, el('b', { 'data-field': k.replace(/ /g, '-'), text: v }), k)),
          )
        : el('p', {
            class: 'note',
            text: 'No longer in the decision table (forgotten after every ACK); the timeline below is what this node kept.',
          });
    // Each participant: the leader's view while it tracks the transaction, else the history's; a forced removal named
    // in its row.
    const removedText = (id) => {
      const x =
        (r.removed ?? []).find((y) => y.participantId === id) ??
        (h?.acts ?? []).find((a) => a.kind === 'removed' && a.participantId === id);
      return x
        ? el('span', {
            class: 'down',
            'data-removed': id,
            text: `removed with --force by ${x.operator} at ${time(x.atMs)}: ${x.reason}; no longer delivered`,
          })
        : '—';
    };
    const tracked = t && t.phase !== 'decided';
    const people = tracked
      ? t.participants.map((p) => [
          p.id,
          p.vote || '—',
          p.acked ? 'yes' : t.outcome === 'ABORTED' ? 'not needed' : 'no',
          String(p.retries),
          removedText(p.id),
        ])
      : (h?.participants ?? []).map((p) => [
          p.participantId,
          p.vote || '—',
          p.acked ? 'yes' : h.outcome === 'abort' ? 'not needed' : 'no',
          '—',
          removedText(p.participantId),
        ]);
    const from = tracked ? `as the leader ${r.nodeId} tracks them` : `from node ${r.nodeId}'s history`;
    const events = r.timeline.map((e) => [
      time(e.atMs),
      e.kind,
      e.participantId || '—',
      e.detail ? el('span', { title: e.raw || null, text: e.detail }) : '—',
      e.index > 0 ? String(e.index) : '—',
      e.count > 1 ? el('span', { 'data-repeat': e.count, text: `×${e.count}, last at ${time(e.lastAtMs)}` }) : '',
    ]);
    state.body.replaceChildren(
      facts,
      t && t.reason
        ? el('p', { text: `Reason: ${t.reason}` })
        : !t && h?.reason
          ? el('p', { text: `Reason: ${h.reason}` })
          : '',
      table(
        `Participants, ${from}`,
        ['participant', 'vote', 'acknowledged', 'retries', 'removed'],
        people,
        'no participant is known here',
      ),
      !r.leader
        ? el('p', {
            class: 'note',
            text: 'This node is not the leader: it saw only the decision and the forget; PREPARE, VOTE and ACK are on the leader.',
          })
        : '',
      el('h2', { text: 'Timeline' }),
      table(
        `Events node ${r.nodeId} recorded, in order; a retry counts on its first row`,
        ['at', 'event', 'participant', 'detail', 'log index', 'repeated'],
        events,
        'this node kept no events for it',
      ),
      r.timelineDropped > 0
        ? el('p', { class: 'muted', text: `${r.timelineDropped} later events were not kept.` })
        : '',
      t && t.resolutions.length > 0
        ? table(
            'Operators’ resolutions',
            ['outcome', 'operator', 'reason', 'at'],
            t.resolutions.map((x) => [x.outcome, x.operator, x.reason, time(x.atMs)]),
            '',
          )
        : '',
      t && t.heuristics.length > 0
        ? table(
            'Heuristic records',
            ['participant', 'kind', 'outcome', 'operator', 'reason'],
            t.heuristics.map((h) => [h.participantId, h.kind, h.outcome, h.operator, h.reason]),
            '',
          )
        : '',
    );
  },
};

Object.assign(pages, {
  async sagas(view, state) {
    state.filter ??= 'running';
    if (!state.body) {
      const select = el(
        'select',
        { id: 'saga-filter', name: 'filter' },
        ['running', 'stuck', 'ended', 'all'].map((f) =>
          el('option', { value: f, selected: f === state.filter, text: f }),
        ),
      );
      select.addEventListener('change', () => {
        state.filter = select.value;
        refresh();
      });
      state.body = el('div');
      view.replaceChildren(
        el('h2', { text: 'Sagas' }),
        el('form', { onsubmit: (e) => e.preventDefault() }, el('label', { for: 'saga-filter' }, 'Show', select)),
        state.body,
      );
    }
    const r = await api(`/api/sagas?filter=${encodeURIComponent(state.filter)}&limit=200`);
    const rows = r.sagas.map((x) => [
      el('a', { href: `#saga/${encodeURIComponent(x.sagaId)}`, text: x.sagaId }),
      x.type || '—',
      x.state,
      `${x.steps.filter((st) => st.status === 'done').length}/${x.steps.length} done`,
      x.stuck
        ? el('span', {
            class: 'down',
            'data-stuck': x.sagaId,
            text: `stuck on step ${x.stuck.step} ${x.stuck.kind} after ${x.stuck.attempts} attempts`,
          })
        : '—',
      x.stuck ? x.stuck.lastError : '—',
      time(x.startedAtMs),
      Object.entries(x.labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ') || '—',
    ]);
    state.body.replaceChildren(
      el(
        'ul',
        { class: 'summary', 'aria-label': 'Sagas' },
        [
          ['running', r.counts.running],
          ['stuck', r.counts.stuck],
          ['ended', r.counts.ended],
        ].map(([k, v]) => el('li', {}, el('b', { 'data-field': `sagas-${k}`, text: v }), k)),
      ),
      r.leaderRef
        ? el('p', { class: 'note' }, 'Retry and resolve run on the leader: ', leaderLink(r.leaderRef, '#sagas'), '.')
        : '',
      table(
        `${r.filter} sagas on ${r.nodeId}, oldest first`,
        ...withGroup(r.sagas, ['id', 'type', 'state', 'steps', 'stuck', 'last error', 'started', 'labels'], rows),
        `no ${r.filter} sagas`,
      ),
    );
  },

  async saga(view, state, id) {
    if (!state.body) {
      state.body = el('div');
      state.msg = el('div');
      state.acts = el('div');
      view.replaceChildren(
        el('h2', {}, 'Saga ', el('code', { text: id })),
        el('p', {}, el('a', { href: '#sagas', text: '← all sagas' })),
        state.body,
        state.acts,
        state.msg,
      );
    }
    let r;
    try {
      r = await api(`/api/sagas/${encodeURIComponent(id)}`);
    } catch (err) {
      state.body.replaceChildren(message('error', err.message));
      return;
    }
    const x = r.saga;
    const steps = x.steps.map((st, k) => [
      String(k),
      st.service,
      st.name,
      el('span', { 'data-step-status': k, text: st.status }),
      st.attempts > 0 ? String(st.attempts) : '—',
      st.lastError || '—',
      st.lastFailureAtMs > 0 ? time(st.lastFailureAtMs) : '—',
    ]);
    const events = x.timeline.map((e) => [
      time(e.atMs),
      String(e.index),
      e.what,
      e.step >= 0 ? String(e.step) : '—',
      e.kind || '—',
      e.detail || '—',
      e.operator || '—',
    ]);
    state.body.replaceChildren(
      el(
        'ul',
        { class: 'summary', 'aria-label': 'Saga' },
        [
          ['state', x.state],
          ['type', x.type || '—'],
          ['started', time(x.startedAtMs)],
          ['ended', x.endedAtMs ? time(x.endedAtMs) : '—'],
        ].map(([k, v]) => el('li', {}, el('b', { 'data-field': `saga-${k}`, text: v }), k)),
      ),
      x.stuck
        ? el('p', {
            class: 'note',
            role: 'status',
            text: `Stuck on step ${x.stuck.step}'s ${x.stuck.kind} after ${x.stuck.attempts} attempts; last error: ${x.stuck.lastError}`,
          })
        : '',
      table(
        'Steps',
        ['step', 'service', 'name', 'status', 'failed attempts', 'last error', 'last failure'],
        steps,
        'no steps',
      ),
      el('h2', { text: 'Timeline' }),
      table(
        'What the log applied, in order',
        ['at', 'log index', 'what', 'step', 'call', 'detail', 'operator'],
        events,
        'nothing yet',
      ),
    );
    // The form only where an act can succeed: on the leader, for a stuck saga. Built once, so what the operator typed
    // stays.
    state.r = r;
    if (!state.form) {
      const reason = el('textarea', { id: 'saga-reason', name: 'reason', rows: 2, required: true });
      const operator = el('input', { id: 'saga-operator', name: 'operator', autocomplete: 'name' });
      const send = async (what) => {
        const cur = state.r.actions.resolve;
        const body = what === 'retry' ? {} : { step: cur.step, as: cur.as };
        try {
          const a = await api(`/api/sagas/${encodeURIComponent(id)}/${what}`, {
            ...body,
            reason: reason.value,
            operator: operator.value,
          });
          state.msg.replaceChildren(
            message(
              'ok',
              `${what === 'retry' ? 'Retried' : 'Resolved'} by ${a.operator}; the saga is ${a.saga?.state ?? 'updated'}.`,
            ),
          );
        } catch (err) {
          state.msg.replaceChildren(message('error', `Refused: ${err.message}`));
        }
      };
      state.resolveButton = el('button', { type: 'button', onclick: () => send('resolve') });
      state.form = el(
        'form',
        { 'aria-label': 'Act on this saga', novalidate: true, hidden: true, onsubmit: (e) => e.preventDefault() },
        el('h2', { text: 'Act on this saga' }),
        el('label', { for: 'saga-reason' }, 'Reason (recorded in the log)', reason),
        el('label', { for: 'saga-operator' }, 'Your name (optional)', operator),
        el('button', { type: 'button', onclick: () => send('retry'), text: 'Retry now' }),
        ' ',
        state.resolveButton,
      );
      state.why = el('p', { class: 'muted', 'data-note': 'saga-acts' });
      state.acts.replaceChildren(state.form, state.why);
    }
    const offered = r.actions.retry.offered;
    state.form.hidden = !offered;
    if (offered)
      state.resolveButton.textContent = `Mark step ${r.actions.resolve.step} ${r.actions.resolve.as} by hand`;
    state.why.replaceChildren(
      ...(offered
        ? []
        : [
            `No retry or resolve here: ${r.actions.retry.why}`,
            ...(r.leader
              ? ['.']
              : [
                  ' — ',
                  leaderLink(r.leaderRef, `#saga/${encodeURIComponent(id)}`, `this saga on ${r.leaderRef.leaderId}`),
                  '.',
                ]),
          ]),
    );
  },

  async tcc(view) {
    const r = await api('/api/tcc');
    const onLeader = leaderLink(r.leaderRef, '#tcc', 'on the leader');
    const until = (x) =>
      x.deadlineInMs === null
        ? `until ${x.participantId} acknowledges the ${x.outcome === 'COMMITTED' ? 'COMMIT' : 'ABORT'}`
        : x.deadlineInMs > 0
          ? `undecided; aborted in ${age(x.deadlineInMs)} if still undecided`
          : 'undecided, past its deadline: being aborted';
    // What the participant's YES said of its reserve's TTL, counted by the leader from the vote's arrival.
    const expires = (x) =>
      x.reserveExpiresInMs === null
        ? el('span', {
            'data-expires': 'unknown',
            class: 'muted',
            title: 'its YES carried no TTL: the Try gave none, or the participant does not send it',
            text: 'unknown',
          })
        : x.reserveExpiresInMs > 0
          ? el('span', {
              'data-expires': 'in',
              text: `in ${age(x.reserveExpiresInMs)} (at ${time(x.reserveExpiresAtMs)})`,
            })
          : el('span', {
              'data-expires': 'expired',
              class: 'down',
              title: 'the participant asks the cluster for the outcome and applies it; it never cancels alone',
              text: `expired ${age(-x.reserveExpiresInMs)} ago`,
            });
    const rows = (r.reserves ?? []).map((x) => [
      x.participantId,
      el('a', {
        href: `#txn/${encodeURIComponent(x.txnId)}`,
        'data-reserve': `${x.participantId}/${x.txnId}`,
        text: x.txnId,
      }),
      x.holds || '—',
      age(x.ageMs),
      x.phase === 'delivering'
        ? `decided ${x.outcome}, not acknowledged${x.retries > 0 ? ` (${x.retries} failed deliveries)` : ''}`
        : 'voted YES, awaiting the decision',
      until(x),
      expires(x),
    ]);
    view.replaceChildren(
      el('h2', { text: 'TCC reserves' }),
      el('p', {
        class: 'muted',
        text: 'A TCC participant holds a reserve (its Try) from its YES vote until the cluster’s decision reaches it: Confirm on COMMIT, Cancel on ABORT. The cluster knows what each was enlisted with and how long the transaction has run. A TTL the Try gave is the participant’s own (when it runs out the participant asks the cluster to abort, never cancels alone), counted by its verdict_participant_tcc_reserves_held and verdict_participant_tcc_reserves_expired_total; its YES says how long the reserve has left, and “reserve expires” counts that from the vote’s arrival at the leader (unknown when the vote said nothing: no TTL, or a participant that does not send it).',
      }),
      r.note ? el('p', { class: 'note' }, r.note, ': ', leaderLink(r.leaderRef, '#tcc')) : '',
      table(
        'TCC participants',
        ['participant', 'resource kind', 'address', 'reserves held'],
        r.participants.map((p) => [
          p.id,
          p.kind,
          p.endpoint,
          p.held === null ? onLeader : el('span', { 'data-held': p.id, text: String(p.held) }),
        ]),
        'no TCC participant is registered',
      ),
      r.reserves === null
        ? ''
        : table(
            `Reserves held for transactions the leader ${r.nodeId} works on, oldest first`,
            [
              'participant',
              'transaction',
              'reserved (as enlisted)',
              'held for',
              'state',
              'held until',
              'reserve expires',
            ],
            rows,
            'no reserve is held',
          ),
      r.truncated ? el('p', { class: 'muted', text: 'More reserves are held than shown here.' }) : '',
    );
  },

  async history(view, state) {
    state.q ??= { since: '24h', until: '', participant: '', outcome: '', kind: '', limit: '100' };
    if (!state.body) {
      const field = (name, label, attrs = {}) => {
        const input = el('input', {
          id: `history-${name}`,
          name,
          value: state.q[name],
          autocomplete: 'off',
          spellcheck: 'false',
          ...attrs,
        });
        return [el('label', { for: `history-${name}` }, label, input), input];
      };
      const choose = (name, label, options) => {
        const select = el(
          'select',
          { id: `history-${name}`, name },
          options.map(([v, text]) => el('option', { value: v, selected: v === state.q[name], text })),
        );
        return [el('label', { for: `history-${name}` }, label, select), select];
      };
      const parts = [
        field('since', 'Since (30m, 24h, 7d or an ISO time)'),
        field('until', 'Until (optional)'),
        field('participant', 'Participant (optional)'),
        choose('outcome', 'Outcome', [
          ['', 'any'],
          ['committed', 'committed'],
          ['aborted', 'aborted'],
        ]),
        choose('kind', 'Kind', [
          ['', 'transactions and sagas'],
          ['txn', 'transactions'],
          ['saga', 'sagas'],
        ]),
        field('limit', 'At most', { inputmode: 'numeric', size: 5 }),
      ];
      state.form = el(
        'form',
        {
          role: 'search',
          'aria-label': 'Search the history',
          onsubmit: (e) => {
            e.preventDefault();
            for (const [, input] of parts) state.q[input.name] = input.value.trim();
            refresh();
          },
        },
        parts.map(([label]) => label),
        el('button', { type: 'submit', text: 'Search' }),
      );
      state.body = el('div');
      view.replaceChildren(el('h2', { text: 'History' }), state.form, state.body);
    }
    const params = new URLSearchParams(Object.entries(state.q).filter(([, v]) => v !== ''));
    let r;
    try {
      r = await api(`/api/history?${params}`);
    } catch (err) {
      state.body.replaceChildren(message('error', err.message));
      return;
    }
    const rows = r.records.map((x) =>
      x.saga
        ? [
            el('a', {
              href: `#saga/${encodeURIComponent(x.saga.sagaId)}`,
              'data-history': x.saga.sagaId,
              text: x.saga.sagaId,
            }),
            'saga',
            x.saga.state,
            time(x.saga.startedAtMs),
            x.saga.steps.map((st) => `${st.service}/${st.name} ${st.status}`).join(', '),
            [x.saga.type, ...Object.entries(x.saga.labels).map(([k, v]) => `${k}=${v}`)].filter((v) => v).join(' ') ||
              '—',
          ]
        : [
            el('a', { href: `#txn/${encodeURIComponent(x.txnId)}`, 'data-history': x.txnId, text: x.txnId }),
            'transaction',
            x.outcome === 'commit' ? 'committed' : x.outcome === 'abort' ? 'aborted' : 'unknown',
            time(x.decidedAtMs),
            x.participants
              .map((p) => `${p.participantId}${p.vote ? ` ${p.vote}` : ''}${p.acked ? ' acked' : ''}`)
              .join(', '),
            [
              x.reason,
              ...x.acts.map((a) =>
                a.kind === 'resolve'
                  ? `resolved by ${a.operator}`
                  : a.kind === 'removed'
                    ? `${a.participantId} removed by ${a.operator}`
                    : `${a.participantId} ${a.effect}`,
              ),
            ]
              .filter((v) => v)
              .join('; ') || '—',
          ],
    );
    state.body.replaceChildren(
      ...r.lacks.map((l) =>
        el('p', {
          class: 'note',
          text: `This node's history lacks ${r.groups > 1 ? `group ${l.group}'s ` : ''}log entries ${l.firstIndex}–${l.lastIndex}: it installed a snapshot covering them (ask another node).`,
        }),
      ),
      table(
        `Node ${r.nodeId}'s history, newest first (it keeps records back to ${time(r.oldestAtMs)}; ${Math.round(r.bytes / 1024)} KiB)`,
        ...(r.groups > 1
          ? withGroup(
              r.records,
              ['id', 'kind', 'outcome', 'at', 'participants / steps', 'reason, acts / type, labels'],
              rows,
            )
          : [['id', 'kind', 'outcome', 'at', 'participants / steps', 'reason, acts / type, labels'], rows]),
        'nothing in that range',
      ),
      r.truncated
        ? el('p', { class: 'muted', text: 'More matched: narrow the range or raise the limit (at most 1000).' })
        : '',
    );
  },

  async leases(view) {
    const r = await api('/api/leases');
    const relays = r.relays.map((x) => [
      x.prefix,
      x.holder,
      x.partitions.join(', '),
      `${age(Math.max(0, x.expiresInMs))}`,
    ]);
    const rows = r.leases.map((l) => [
      el('span', { 'data-lease': l.name, text: l.name }),
      l.holder,
      l.owner || '—',
      String(l.epoch),
      l.live ? `in ${age(l.expiresInMs)}` : el('span', { class: 'down', text: `expired ${age(-l.expiresInMs)} ago` }),
    ]);
    view.replaceChildren(
      el('h2', { text: 'Outbox relays' }),
      table(
        'Relays, read from their leases (<prefix>/p<partition>)',
        ['relay prefix', 'holder', 'partitions held', 'first lease ends'],
        relays,
        'no outbox relay holds a lease',
      ),
      el('h2', { text: 'Leases' }),
      table(
        `Leases in the replicated table, by name (cluster clock ${time(r.clockAtMs)})`,
        ['name', 'holder', 'owner', 'epoch', 'ends'],
        rows,
        'no lease is held',
      ),
    );
  },
});

// ---- charts: plain SVG ------------------------------------------------------

const SVG_NS = 'http://www.w3.org/2000/svg';
const COLOURS = ['#1f5fbf', '#b3261e', '#1e7b34', '#8a5a00', '#6a3fb5', '#00727a'];

function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  for (const c of children.flat(Infinity))
    if (c !== null && c !== undefined) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

/**
 * A line chart of `series` ([{ name, points: [[atMs, value|null]] }]) over
 * the window ending at `nowMs`; a null value breaks the line.
 */
function lineChart(title, unit, series, nowMs, windowMs) {
  const W = 560;
  const H = 150;
  const L = 48;
  const B = 20;
  const values = series.flatMap((x) => x.points.map((p) => p[1]).filter((v) => v !== null));
  const max = Math.max(1e-9, ...values) * 1.1 || 1;
  const xOf = (atMs) => L + ((atMs - (nowMs - windowMs)) / windowMs) * (W - L - 4);
  const yOf = (v) => H - B - (v / max) * (H - B - 8);
  const fmt = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
  const lines = series.map((x, i) => {
    const parts = [];
    let run = [];
    for (const [atMs, v] of x.points) {
      if (v === null) {
        if (run.length) parts.push(run);
        run = [];
      } else run.push(`${xOf(atMs).toFixed(1)},${yOf(v).toFixed(1)}`);
    }
    if (run.length) parts.push(run);
    const colour = COLOURS[i % COLOURS.length];
    // A dot per sample while there are few, so a line of one sample still shows.
    const dots =
      x.points.length <= 60
        ? parts.flat().map((pt) => svg('circle', { cx: pt.split(',')[0], cy: pt.split(',')[1], r: 2, fill: colour }))
        : [];
    return [
      parts.map((pts) => svg('polyline', { points: pts.join(' '), fill: 'none', stroke: colour, 'stroke-width': 1.5 })),
      dots,
    ];
  });
  const last = series.map((x) => [...x.points].reverse().find((p) => p[1] !== null)?.[1] ?? null);
  const figure = el(
    'figure',
    { class: 'chart', 'data-chart': title },
    svg(
      'svg',
      {
        viewBox: `0 0 ${W} ${H}`,
        width: W,
        height: H,
        role: 'img',
        'aria-label': `${title}, last 15 minutes; now ${series.map((x, i) => `${x.name} ${last[i] === null ? 'none' : fmt(last[i])}`).join(', ')}`,
      },
      svg('line', { x1: L, y1: H - B, x2: W - 4, y2: H - B, stroke: '#d5d9e0' }),
      svg('line', { x1: L, y1: 8, x2: L, y2: H - B, stroke: '#d5d9e0' }),
      svg('text', { x: L - 4, y: 14, 'text-anchor': 'end', 'font-size': 10, fill: '#5a6270' }, fmt(max / 1.1)),
      svg('text', { x: L - 4, y: H - B, 'text-anchor': 'end', 'font-size': 10, fill: '#5a6270' }, '0'),
      svg('text', { x: L, y: H - 4, 'font-size': 10, fill: '#5a6270' }, '−15 min'),
      svg('text', { x: W - 4, y: H - 4, 'text-anchor': 'end', 'font-size': 10, fill: '#5a6270' }, 'now'),
      lines,
    ),
    el(
      'figcaption',
      {},
      el('b', { text: `${title} (${unit})` }),
      ' ',
      series.map((x, i) =>
        el('span', {
          class: 'legend',
          style: `color:${COLOURS[i % COLOURS.length]}`,
          text: `■ ${x.name}: ${last[i] === null ? '—' : fmt(last[i])}`,
        }),
      ),
    ),
  );
  return figure;
}

pages.charts = async (view) => {
  const r = await api('/api/charts');
  const pts = (f) => r.samples.map((x) => [x.atMs, f(x)]);
  const reasons = [...new Set(r.samples.flatMap((x) => Object.keys(x.aborts)))].sort();
  const per = r.everyMs / 1000;
  view.replaceChildren(
    el('h2', { text: 'Charts' }),
    el('p', {
      class: 'muted',
      text: `The last 15 minutes on node ${r.nodeId}, sampled every ${per} s and kept in its memory (a restart empties them). Commits, aborts and latency are counted while this node leads; in doubt and unacked are the leader's figures.`,
    }),
    r.samples.length === 0
      ? el('p', {
          class: 'muted',
          'data-note': 'charts-empty',
          text: `No sample yet: the first comes ${per} s after the node starts.`,
        })
      : '',
    el(
      'div',
      { class: 'charts' },
      lineChart(
        'commits',
        'per second',
        [{ name: 'commits/s', points: pts((x) => x.commitsPerS) }],
        r.nowMs,
        r.windowMs,
      ),
      lineChart(
        'commit latency',
        'ms',
        [
          { name: 'p50', points: pts((x) => x.p50Ms) },
          { name: 'p99', points: pts((x) => x.p99Ms) },
        ],
        r.nowMs,
        r.windowMs,
      ),
      lineChart(
        'aborts by reason',
        'per second',
        (reasons.length ? reasons : ['none']).map((reason) => ({
          name: reason,
          points: pts((x) => (x.aborts[reason] ?? 0) / per),
        })),
        r.nowMs,
        r.windowMs,
      ),
      lineChart(
        'in doubt',
        'transactions',
        [{ name: 'in doubt', points: pts((x) => (x.leader ? x.inDoubt : null)) }],
        r.nowMs,
        r.windowMs,
      ),
      lineChart(
        'unacked',
        'transactions',
        [{ name: 'unacked', points: pts((x) => (x.leader ? x.unacked : null)) }],
        r.nowMs,
        r.windowMs,
      ),
    ),
  );
};

async function transfer(msg, to) {
  msg.replaceChildren(message('ok', `Asking the leader to hand over to ${to}…`));
  try {
    const r = await api('/api/leader/transfer', { to });
    msg.replaceChildren(message('ok', `${r.leaderId} leads now (term ${r.term}).`));
  } catch (err) {
    msg.replaceChildren(message('error', `Leader transfer refused: ${err.message}`));
  }
}

// ---- routing and polling ----------------------------------------------------

let current = null;

function route() {
  const hash = decodeURIComponent(location.hash.slice(1)) || 'cluster';
  const [name, ...rest] = hash.split('/');
  const page = pages[name] ? name : 'cluster';
  const section = { txn: 'transactions', saga: 'sagas' }[page] ?? page;
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.page === section) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const view = el('section', { 'aria-live': 'off' });
  main.replaceChildren(view);
  current = { page, view, state: {}, arg: rest.join('/') };
  generation++;
  refresh();
}

async function refresh() {
  clearTimeout(timer);
  const mine = generation;
  const c = current;
  try {
    await pages[c.page](c.view, c.state, c.arg);
    if (mine === generation) setStatus(`live · updated ${time(Date.now())}`);
  } catch (err) {
    if (mine !== generation) return;
    setStatus(err instanceof ApiError ? err.message : `the page failed: ${err.message}`, true);
    if (c.view.childElementCount === 0)
      c.view.replaceChildren(message('error', err instanceof ApiError ? err.message : String(err)));
  }
  if (mine === generation) timer = setTimeout(refresh, POLL_MS);
}

window.addEventListener('hashchange', route);
route();
