/**
 * `GET /openapi`: a self-contained page (no CDN, no external asset) that reads `/openapi.json`
 * and lists every operation with its parameters, body and answers.
 */
export const openApiPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Queen-TS HTTP API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#1b1f24}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem;border-bottom:1px solid #ddd}
details{border:1px solid #e3e3e3;border-radius:4px;margin:.4rem 0;padding:.3rem .6rem}
summary{cursor:pointer}code,pre{font:12px ui-monospace,monospace}pre{background:#f6f8fa;padding:.5rem;overflow:auto}
.m{display:inline-block;min-width:4.2rem;font-weight:600}.GET{color:#0a7}.POST{color:#06c}.PUT{color:#a60}.DELETE{color:#c33}
</style></head><body>
<h1>Queen-TS HTTP API</h1>
<p>Generated from the route schemas. Raw document: <a href="openapi.json">openapi.json</a>.</p>
<div id="ops">Loading…</div>
<script>
(async function () {
  const root = document.getElementById('ops');
  const doc = await (await fetch('openapi.json')).json();
  root.textContent = '';
  const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; };
  const block = (title, value) => { const d = el('div'); d.append(el('strong', title)); const p = el('pre', JSON.stringify(value, null, 2)); d.append(p); return d; };
  const byTag = new Map();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const tag = (op.tags && op.tags[0]) || 'other';
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push([method.toUpperCase(), path, op]);
    }
  }
  for (const [tag, ops] of byTag) {
    root.append(el('h2', tag));
    for (const [method, path, op] of ops) {
      const d = el('details');
      const s = el('summary');
      s.append(el('span', method, 'm ' + method), el('code', path), document.createTextNode(op.summary ? ' — ' + op.summary : ''));
      d.append(s);
      if (op.parameters) d.append(block('Parameters', op.parameters.map((p) => ({ in: p.in, name: p.name, required: !!p.required, description: p.description }))));
      if (op.requestBody) d.append(block('Body', op.requestBody.content['application/json'].schema));
      d.append(block('Answers', op.responses));
      root.append(d);
    }
  }
  if (doc.components && doc.components.schemas) root.append(el('h2', 'Shared schemas'), block('', doc.components.schemas));
})().catch((e) => { document.getElementById('ops').textContent = 'Could not load openapi.json: ' + e; });
</script></body></html>
`;
