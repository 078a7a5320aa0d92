/** The shell: auth gate, navigation, live-refresh control, and the page router. */
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, authRequired, canAdmin, obj, offline } from './api';
import { Toasts } from './components/overlay';
import { Icon, Link, type IconName } from './components/ui';
import { fmtDuration } from './format';
import { refresh, refreshMs, snapshot, startLive } from './live';
import { DeadLetters } from './pages/DeadLetters';
import { Ephemeral } from './pages/Ephemeral';
import { Groups } from './pages/Groups';
import { JwtOff } from './pages/JwtOff';
import { Messages } from './pages/Messages';
import { NotFound } from './pages/NotFound';
import { Overview } from './pages/Overview';
import { QueueDetailPage } from './pages/QueueDetail';
import { Queues } from './pages/Queues';
import { Streams } from './pages/Streams';
import { Traces } from './pages/Traces';
import { match, useLocation } from './router';
import { useStore } from './store';

const NAV: { href: string; label: string; icon: IconName; match: (p: string) => boolean }[] = [
  { href: '/', label: 'Overview', icon: 'overview', match: (p) => p === '/' },
  { href: '/queues', label: 'Queues', icon: 'queues', match: (p) => p.startsWith('/queues') },
  { href: '/messages', label: 'Messages', icon: 'messages', match: (p) => p.startsWith('/messages') },
  { href: '/dead-letters', label: 'Dead letters', icon: 'dlq', match: (p) => p.startsWith('/dead-letters') },
  { href: '/consumer-groups', label: 'Consumer groups', icon: 'groups', match: (p) => p.startsWith('/consumer-groups') },
  { href: '/traces', label: 'Traces', icon: 'traces', match: (p) => p.startsWith('/traces') },
  { href: '/streaming', label: 'Streams', icon: 'messages', match: (p) => p.startsWith('/streaming') },
  { href: '/ephemeral', label: 'Ephemeral', icon: 'queues', match: (p) => p.startsWith('/ephemeral') },
];

const TITLES: Record<string, string> = {
  '/': 'Overview',
  '/queues': 'Queues',
  '/messages': 'Messages',
  '/dead-letters': 'Dead letters',
  '/consumer-groups': 'Consumer groups',
  '/traces': 'Traces',
  '/streaming': 'Streams',
  '/ephemeral': 'Ephemeral queues',
};

function jwtMarked(): boolean {
  return document.querySelector('meta[name="queen-auth"]')?.getAttribute('content') === 'jwt';
}

type Gate = 'checking' | 'open' | 'jwt';

export function App() {
  const [gate, setGate] = useState<Gate>(jwtMarked() ? 'jwt' : 'checking');
  const needsAuth = useStore(authRequired);

  useEffect(() => {
    if (gate !== 'checking') return;
    // With JWT on (docs/security.md#dashboard-and-auth-routes), /auth/me answers 401 from its own handler. Anything else
    // (200 standalone identity, or no auth routes at all) means the dashboard is open.
    api('/auth/me')
      .then((me) => {
        // behind the proxy (standalone false), /auth/me names the person's role on the acting cluster
        if (obj(me).standalone === false) canAdmin.set(obj(me).role === 'admin');
        setGate('open');
      })
      .catch((e: unknown) => setGate(e instanceof ApiError && e.status === 401 ? 'jwt' : 'open'));
  }, [gate]);

  useEffect(() => {
    if (gate === 'open') startLive();
  }, [gate]);

  if (gate === 'jwt' || needsAuth) return <JwtOff />;
  if (gate === 'checking') return <div class="boot" />;
  return <Shell />;
}

function Shell() {
  const { path } = useLocation();
  useEffect(() => {
    const base = '/' + (path.split('/')[1] ?? '');
    const title = TITLES[base] ?? 'Queen';
    const q = match('/queues/:name', path);
    document.title = q ? `${q.name || '(empty name)'} · Queues · Queen` : `${title} · Queen`;
    // on a phone the navigation is a scrolling strip: keep the current page's tab in view
    document.querySelector('.nav-item.active')?.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  }, [path]);

  let page;
  let m: Record<string, string> | null;
  if (path === '/' || path === '/index.html') page = <Overview />;
  else if (path === '/queues') page = <Queues />;
  else if ((m = match('/queues/:name', path))) page = <QueueDetailPage name={m.name!} />;
  else if (path === '/messages') page = <Messages />;
  else if (path === '/dead-letters') page = <DeadLetters />;
  else if (path === '/consumer-groups') page = <Groups />;
  else if (path === '/traces') page = <Traces />;
  else if (path === '/streaming') page = <Streams />; // /streams/ is the API family (docs/streams.md#routes)
  else if (path === '/ephemeral') page = <Ephemeral />;
  else page = <NotFound />;

  return (
    <div class="layout">
      <aside class="sidebar">
        <div class="sidebar-inner">
        <Link href="/" class="brand">
          <span class="brand-mark">
            <svg viewBox="0 0 32 32" width="22" height="22" aria-hidden="true">
              <path d="M8 21l3-10 5 6 5-6 3 10z" fill="currentColor" />
            </svg>
          </span>
          <span class="brand-name">Queen</span>
        </Link>
        <nav class="nav" aria-label="Main">
          {NAV.map((n) => (
            <Link key={n.href} href={n.href} class={`nav-item ${n.match(path) ? 'active' : ''}`} current={n.match(path)}>
              <Icon name={n.icon} />
              <span>{n.label}</span>
            </Link>
          ))}
        </nav>
        <BrokerStatus />
        </div>
      </aside>
      <main class="main">
        <OfflineBanner />
        {page}
      </main>
      <Toasts />
    </div>
  );
}

function OfflineBanner() {
  const off = useStore(offline);
  if (!off) return null;
  return (
    <div class="banner banner-bad" role="status">
      <Icon name="alert" size={16} /> The broker cannot be reached. Showing the last data received; retrying.
    </div>
  );
}

function BrokerStatus() {
  const snap = useStore(snapshot);
  const period = useStore(refreshMs);
  const off = useStore(offline);
  const h = obj(snap.health);
  const healthy = !off && h.status === 'healthy';
  const uptime = typeof obj(snap.metrics).uptime === 'number' ? (obj(snap.metrics).uptime as number) : undefined;
  return (
    <div class="broker-status">
      <div class="status-line">
        <span class={`dot ${snap.at === 0 ? '' : healthy ? 'dot-good' : 'dot-bad'}`} />
        <span>{snap.at === 0 ? 'Connecting…' : healthy ? 'Healthy' : off ? 'Unreachable' : String(h.status ?? 'Unknown')}</span>
        {typeof h.version === 'string' && <span class="muted"> · v{h.version}</span>}
      </div>
      {uptime !== undefined && <div class="muted small status-up">up {fmtDuration(uptime)}</div>}
      <div class="live-ctl">
        <button class="icon-btn" title={period === 0 ? 'Resume live refresh' : 'Pause live refresh'} aria-label={period === 0 ? 'Resume live refresh' : 'Pause live refresh'} onClick={() => refreshMs.set(period === 0 ? 5000 : 0)}>
          <Icon name={period === 0 ? 'play' : 'pause'} size={15} />
        </button>
        <select class="select select-sm" value={String(period)} onChange={(e) => refreshMs.set(Number((e.target as HTMLSelectElement).value))} aria-label="Refresh period">
          <option value="2000">Live · 2s</option>
          <option value="5000">Live · 5s</option>
          <option value="15000">Live · 15s</option>
          <option value="30000">Live · 30s</option>
          <option value="0">Paused</option>
        </select>
        <button class="icon-btn" title="Refresh now" aria-label="Refresh now" onClick={() => void refresh()}>
          <Icon name="refresh" size={15} />
        </button>
      </div>
    </div>
  );
}
