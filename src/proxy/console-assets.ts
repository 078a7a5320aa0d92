/**
 * The console's page, style and script (docs/proxy.md#console), built into the binary as text: a
 * plain page that works with the proxy's strict CSP (`script-src 'self'`, no inline script), for
 * desktop and phone widths. The script talks only to `/auth/*` and `/api/console/*`.
 */

/** The page shell; the script fills it. */
export const CONSOLE_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Queen console</title><link rel="stylesheet" href="/console/app.css"></head>
<body>
<header>
  <strong class="brand">Queen console</strong>
  <label class="picker">Cluster <select id="cluster" data-testid="cluster-picker"></select></label>
  <span id="who" data-testid="who"></span>
  <span id="role" class="badge" data-testid="role"></span>
  <a href="/" id="dashboard" data-testid="dashboard-link">Queues dashboard</a>
  <button id="signout" type="button" data-testid="sign-out">Sign out</button>
</header>
<main>
  <p id="error" class="error" role="alert" hidden></p>
  <p id="readonly" class="note" hidden data-testid="read-only">Your role on this cluster is <b id="readonly-role"></b>: API keys and members are managed by the cluster's admins.</p>
  <section id="keys" hidden>
    <h2>API keys</h2>
    <form id="key-form" data-testid="key-form">
      <input id="key-name" placeholder="Key name" required maxlength="100" data-testid="key-name">
      <span class="scopes">
        <label><input type="checkbox" name="scope" value="produce" data-testid="scope-produce"> produce</label>
        <label><input type="checkbox" name="scope" value="consume" data-testid="scope-consume"> consume</label>
        <label><input type="checkbox" name="scope" value="admin" data-testid="scope-admin"> admin</label>
        <label><input type="checkbox" name="scope" value="read" data-testid="scope-read"> read</label>
      </span>
      <button type="submit" data-testid="create-key">Create key</button>
    </form>
    <div id="new-key" class="new-key" hidden data-testid="new-key-box">
      <p>Copy this key now: it is shown once and never again.</p>
      <code id="new-key-value" data-testid="new-key"></code>
      <button id="copy-key" type="button" data-testid="copy-key">Copy</button> <span id="copied" hidden>Copied</span>
    </div>
    <table><thead><tr><th>Name</th><th>Scopes</th><th>Created</th><th>Last used</th><th>Status</th><th></th></tr></thead><tbody id="key-rows"></tbody></table>
  </section>
  <section id="members" hidden>
    <h2>Members</h2>
    <form id="member-form" data-testid="member-form">
      <input id="member-email" type="email" placeholder="person@example.com" required data-testid="member-email">
      <select id="member-role" data-testid="member-role"><option>viewer</option><option>consumer</option><option>producer</option><option>admin</option></select>
      <button type="submit" data-testid="grant">Grant</button>
    </form>
    <table><thead><tr><th>E-mail</th><th>Role</th><th></th></tr></thead><tbody id="member-rows"></tbody></table>
  </section>
</main>
<script src="/console/app.js"></script>
</body></html>
`;

/** The console's style sheet. */
export const CONSOLE_CSS = `
*{box-sizing:border-box}body{margin:0;font-family:system-ui,sans-serif;background:#f4f5f7;color:#1d1d28}
header{display:flex;flex-wrap:wrap;gap:.6rem 1rem;align-items:center;padding:.8rem 1rem;background:#2d1f6b;color:#fff}
header a{color:#fff}.brand{font-size:1.1rem;margin-right:auto}
.badge{background:#fff3;border-radius:1rem;padding:.1rem .6rem;font-size:.85rem}
main{padding:1rem;max-width:70rem;margin:0 auto}section{background:#fff;border-radius:8px;padding:1rem;margin-bottom:1rem;box-shadow:0 1px 3px #0002}
h2{margin:0 0 .8rem;font-size:1.1rem}form{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin-bottom:.8rem}
input,select,button{font:inherit;padding:.35rem .5rem;border:1px solid #bbb;border-radius:4px}
button{background:#5b3cc4;color:#fff;border-color:#5b3cc4;cursor:pointer}button.danger{background:#fff;color:#b42318;border-color:#b42318}
table{width:100%;border-collapse:collapse;font-size:.9rem}th,td{text-align:left;padding:.4rem;border-bottom:1px solid #e5e5ea}
.new-key{background:#eefbf0;border:1px solid #7cc68a;border-radius:6px;padding:.6rem;margin-bottom:.8rem}
.new-key code{display:block;word-break:break-all;margin:.3rem 0;font-size:.9rem}
.error{background:#fde8e8;color:#9b1c1c;padding:.5rem;border-radius:4px}.note{background:#eef2ff;padding:.6rem;border-radius:6px}
.scopes label{margin-right:.4rem;white-space:nowrap}
@media (max-width:640px){header{padding:.6rem}.brand{width:100%}th:nth-child(3),td:nth-child(3),th:nth-child(4),td:nth-child(4){display:none}form>*{flex:1 1 100%}}
`;

/** The console's script (no framework; ES2020). */
export const CONSOLE_JS = String.raw`
'use strict';
(function () {
  var $ = function (id) { return document.getElementById(id); };
  var state = { me: null, clusters: [], cluster: null };
  function fail(e) { var el = $('error'); el.textContent = (e && e.message) || String(e); el.hidden = false; }
  function api(method, path, body) {
    var init = { method: method, headers: { accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store' };
    if (body !== undefined) { init.body = JSON.stringify(body); init.headers['content-type'] = 'application/json'; }
    return fetch(path, init).then(function (r) {
      if (r.status === 401) { location.href = '/auth/login?next=/console'; throw new Error('signed out'); }
      return r.text().then(function (t) {
        var j = t ? JSON.parse(t) : null;
        if (!r.ok) throw new Error((j && j.error) || ('HTTP ' + r.status));
        return j;
      });
    });
  }
  function td(text) { var c = document.createElement('td'); c.textContent = text; return c; }
  function when(iso) { return iso ? iso.replace('T', ' ').slice(0, 16) : '—'; }
  function base() { return '/api/console/clusters/' + encodeURIComponent(state.cluster.id); }

  function renderKeys() {
    return api('GET', base() + '/keys').then(function (a) {
      var body = $('key-rows'); body.textContent = '';
      a.keys.forEach(function (k) {
        var tr = document.createElement('tr'); tr.setAttribute('data-key', k.name);
        tr.appendChild(td(k.name)); tr.appendChild(td(k.scopes.join(', '))); tr.appendChild(td(when(k.created_at)));
        tr.appendChild(td(when(k.last_used_at))); tr.appendChild(td(k.revoked_at ? 'revoked' : 'active'));
        var act = document.createElement('td');
        if (!k.revoked_at) {
          var b = document.createElement('button'); b.className = 'danger'; b.textContent = 'Revoke'; b.setAttribute('data-testid', 'revoke-key');
          b.onclick = function () { if (confirm('Revoke key ' + k.name + '?')) api('DELETE', base() + '/keys/' + encodeURIComponent(k.id)).then(renderKeys).catch(fail); };
          act.appendChild(b);
        }
        tr.appendChild(act); body.appendChild(tr);
      });
    });
  }
  function renderMembers() {
    return api('GET', base() + '/members').then(function (a) {
      var body = $('member-rows'); body.textContent = '';
      a.members.forEach(function (m) {
        var tr = document.createElement('tr'); tr.setAttribute('data-member', m.email);
        tr.appendChild(td(m.email));
        var rc = document.createElement('td'); var sel = document.createElement('select'); sel.setAttribute('data-testid', 'member-role-select');
        ['viewer', 'consumer', 'producer', 'admin'].forEach(function (r) { var o = document.createElement('option'); o.textContent = r; o.selected = r === m.role; sel.appendChild(o); });
        var self = state.me && m.user_id === state.me.user.id;
        sel.disabled = self;
        sel.onchange = function () { api('PUT', base() + '/members', { email: m.email, role: sel.value }).then(renderMembers).catch(fail); };
        rc.appendChild(sel); tr.appendChild(rc);
        var act = document.createElement('td');
        if (!self) {
          var b = document.createElement('button'); b.className = 'danger'; b.textContent = 'Remove'; b.setAttribute('data-testid', 'remove-member');
          b.onclick = function () { api('DELETE', base() + '/members/' + encodeURIComponent(m.user_id)).then(renderMembers).catch(fail); };
          act.appendChild(b);
        }
        tr.appendChild(act); body.appendChild(tr);
      });
    });
  }
  function show() {
    var c = state.cluster; $('error').hidden = true; $('new-key').hidden = true;
    $('role').textContent = c ? c.role : 'no cluster';
    var admin = !!c && c.role === 'admin';
    $('keys').hidden = !admin; $('members').hidden = !admin;
    $('readonly').hidden = !c || admin; $('readonly-role').textContent = c ? c.role : '';
    if (admin) Promise.all([renderKeys(), renderMembers()]).catch(fail);
  }
  function choose(id) {
    state.cluster = state.clusters.filter(function (c) { return c.id === id; })[0] || state.clusters[0] || null;
    if (state.cluster) localStorage.setItem('queen.actCluster', state.cluster.id);
    show();
  }

  $('signout').onclick = function () {
    api('POST', '/auth/logout', {}).then(function () { localStorage.removeItem('queen.actCluster'); location.href = '/auth/login'; }).catch(fail);
  };
  $('cluster').onchange = function () { choose($('cluster').value); };
  $('key-form').onsubmit = function (ev) {
    ev.preventDefault();
    var scopes = Array.prototype.slice.call(document.querySelectorAll('input[name=scope]:checked')).map(function (i) { return i.value; });
    api('POST', base() + '/keys', { name: $('key-name').value, scopes: scopes }).then(function (k) {
      $('new-key-value').textContent = k.api_key; $('new-key').hidden = false; $('copied').hidden = true; $('key-form').reset();
      return renderKeys();
    }).catch(fail);
  };
  $('copy-key').onclick = function () {
    var text = $('new-key-value').textContent;
    (navigator.clipboard ? navigator.clipboard.writeText(text) : Promise.reject(new Error('no clipboard'))).then(function () { $('copied').hidden = false; }).catch(function () {
      var r = document.createRange(); r.selectNodeContents($('new-key-value')); var s = getSelection(); s.removeAllRanges(); s.addRange(r);
    });
  };
  $('member-form').onsubmit = function (ev) {
    ev.preventDefault();
    api('PUT', base() + '/members', { email: $('member-email').value, role: $('member-role').value }).then(function () { $('member-form').reset(); return renderMembers(); }).catch(fail);
  };

  api('GET', '/auth/me').then(function (me) {
    state.me = me; state.clusters = me.clusters;
    $('who').textContent = me.user.email + (me.operator_live ? ' (operator)' : '');
    var sel = $('cluster');
    me.clusters.forEach(function (c) { var o = document.createElement('option'); o.value = c.id; o.textContent = c.slug; sel.appendChild(o); });
    var saved = localStorage.getItem('queen.actCluster');
    var pick = me.clusters.some(function (c) { return c.id === saved; }) ? saved : (me.acting_cluster ? me.acting_cluster.id : (me.clusters[0] && me.clusters[0].id));
    sel.value = pick || '';
    choose(pick);
  }).catch(fail);
})();
`;
