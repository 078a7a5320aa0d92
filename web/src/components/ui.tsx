/** Small presentational pieces: cards, stats, badges, empty states, JSON, icons. */
import type { ComponentChildren, JSX } from 'preact';
import { ApiError } from '../api';
import { navigate } from '../router';
import { showJson } from '../json';

export function Link({ href, children, class: cls, title, current }: { href: string; children: ComponentChildren; class?: string; title?: string; current?: boolean }) {
  const onClick = (e: MouseEvent) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };
  return (
    <a href={href} onClick={onClick} class={cls} title={title} aria-current={current ? 'page' : undefined}>
      {children}
    </a>
  );
}

export function PageHeader({ title, subtitle, actions, back }: { title: ComponentChildren; subtitle?: ComponentChildren; actions?: ComponentChildren; back?: { href: string; label: string } }) {
  return (
    <header class="page-header">
      <div class="page-title">
        {back && (
          <Link href={back.href} class="back">
            ← {back.label}
          </Link>
        )}
        <h1>{title}</h1>
        {subtitle && <p class="subtitle">{subtitle}</p>}
      </div>
      {actions && <div class="page-actions">{actions}</div>}
    </header>
  );
}

export function Card({ title, actions, children, class: cls, pad = true }: { title?: ComponentChildren; actions?: ComponentChildren; children: ComponentChildren; class?: string; pad?: boolean }) {
  return (
    <section class={`card ${cls ?? ''}`}>
      {(title || actions) && (
        <div class="card-head">
          {title && <h2>{title}</h2>}
          {actions && <div class="card-actions">{actions}</div>}
        </div>
      )}
      <div class={pad ? 'card-body' : 'card-body flush'}>{children}</div>
    </section>
  );
}

export function Stat({ label, value, unit, hint, tone, href, testid }: { label: string; value: string; unit?: string; hint?: ComponentChildren; tone?: 'warn' | 'bad' | 'good'; href?: string; testid?: string }) {
  const body = (
    <>
      <div class="stat-label">{label}</div>
      <div class={`stat-value ${tone ? `tone-${tone}` : ''}`} data-testid={testid}>
        {value}
        {unit && <span class="stat-unit">{unit}</span>}
      </div>
      {hint && <div class="stat-hint">{hint}</div>}
    </>
  );
  return href ? (
    <Link href={href} class="stat stat-link">
      {body}
    </Link>
  ) : (
    <div class="stat">{body}</div>
  );
}

export function Badge({ tone = 'neutral', children, title }: { tone?: 'neutral' | 'good' | 'warn' | 'bad' | 'info'; children: ComponentChildren; title?: string }) {
  return (
    <span class={`badge badge-${tone}`} title={title}>
      {children}
    </span>
  );
}

export function Empty({ icon = 'inbox', title, children, action }: { icon?: IconName; title: string; children?: ComponentChildren; action?: ComponentChildren }) {
  return (
    <div class="empty">
      <div class="empty-icon">
        <Icon name={icon} size={22} />
      </div>
      <div class="empty-title">{title}</div>
      {children && <div class="empty-text">{children}</div>}
      {action && <div class="empty-action">{action}</div>}
    </div>
  );
}

/** What to show when a read failed: a missing route is "not available yet", not an error. */
export function LoadError({ error, what }: { error: ApiError; what: string }) {
  if (error.missingRoute) {
    return (
      <Empty icon="plug" title={`This broker does not serve ${what} yet`}>
        The route behind this view answered <code>404 no_such_route</code>. The rest of the dashboard keeps working.
      </Empty>
    );
  }
  if (error.status === 0) {
    return (
      <Empty icon="alert" title="The broker cannot be reached">
        Retrying on the next refresh.
      </Empty>
    );
  }
  return (
    <Empty icon="alert" title={`Could not load ${what}`}>
      {error.status ? `${error.status}: ` : ''}
      {error.message}
    </Empty>
  );
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <div class="loading" aria-busy="true">
      <span class="spinner" /> {label}
    </div>
  );
}

/** Pretty-printed JSON with light syntax colouring. */
export function Json({ value, class: cls }: { value: unknown; class?: string }) {
  let text: string;
  if (value === undefined) text = 'undefined';
  else {
    try {
      text = showJson(value, 2) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  const parts: JSX.Element[] = [];
  const re = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;
  let last = 0;
  let m: RegExpExecArray | null;
  let i = 0;
  while ((m = re.exec(text))) {
    if (m.index > last) parts.push(<>{text.slice(last, m.index)}</>);
    if (m[1]) {
      parts.push(<span class={m[2] ? 'j-key' : 'j-str'} key={i++}>{m[1]}</span>);
      if (m[2]) parts.push(<>{m[2]}</>);
    } else if (m[3]) parts.push(<span class={m[3] === 'null' ? 'j-null' : 'j-bool'} key={i++}>{m[3]}</span>);
    else if (m[4]) parts.push(<span class="j-num" key={i++}>{m[4]}</span>);
    last = re.lastIndex;
  }
  if (last < text.length) parts.push(<>{text.slice(last)}</>);
  return (
    <pre class={`json ${cls ?? ''}`} data-testid="json">
      {parts}
    </pre>
  );
}

export function Mono({ children, title }: { children: ComponentChildren; title?: string }) {
  return (
    <span class="mono" title={title}>
      {children}
    </span>
  );
}

export function Field({ label, children, class: cls }: { label: string; children: ComponentChildren; class?: string }) {
  return (
    <label class={`field ${cls ?? ''}`}>
      <span class="field-label">{label}</span>
      {children}
    </label>
  );
}

export type IconName =
  | 'overview' | 'queues' | 'messages' | 'dlq' | 'groups' | 'traces' | 'inbox' | 'alert' | 'plug' | 'lock'
  | 'search' | 'refresh' | 'pause' | 'play' | 'trash' | 'replay' | 'seek' | 'close' | 'check' | 'chevron';

const PATHS: Record<IconName, string> = {
  overview: 'M3 13h8V3H3zm10 8h8V11h-8zM3 21h8v-6H3zm10-18v6h8V3z',
  queues: 'M4 6h16M4 12h16M4 18h10',
  messages: 'M4 5h16v11H8l-4 4z',
  dlq: 'M12 3l9 16H3zM12 10v4M12 17v.01',
  groups: 'M8 11a3 3 0 1 0 0-6 3 3 0 0 0 0 6zm8 0a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM2 20c0-3 3-5 6-5s6 2 6 5M14 15.5c.6-.3 1.3-.5 2-.5 3 0 6 2 6 5',
  traces: 'M3 12h4l3-8 4 16 3-8h4',
  inbox: 'M3 13l3-8h12l3 8v6H3zM3 13h5l1 3h6l1-3h5',
  alert: 'M12 3l9 16H3zM12 10v4M12 17v.01',
  plug: 'M9 3v5M15 3v5M6 8h12v3a6 6 0 0 1-12 0zM12 17v4',
  lock: 'M6 11h12v10H6zM8 11V7a4 4 0 0 1 8 0v4',
  search: 'M11 18a7 7 0 1 0 0-14 7 7 0 0 0 0 14zM21 21l-5-5',
  refresh: 'M20 11a8 8 0 0 0-14.9-3M4 4v4h4M4 13a8 8 0 0 0 14.9 3M20 20v-4h-4',
  pause: 'M8 5v14M16 5v14',
  play: 'M7 4l13 8-13 8z',
  trash: 'M4 7h16M10 11v6M14 11v6M6 7l1 13h10l1-13M9 7V4h6v3',
  replay: 'M4 12a8 8 0 1 0 2.3-5.7M4 4v5h5',
  seek: 'M5 5l7 7-7 7M13 5l7 7-7 7',
  close: 'M6 6l12 12M18 6L6 18',
  check: 'M5 12l5 5 9-10',
  chevron: 'M9 6l6 6-6 6',
};

/** A labelled `<select>` over names with an "any" first option; picking it yields `undefined`. */
export function NameSelect({ label, value, names, any, onPick, testid, disabled, display = (n) => n }: {
  label: string; value: string | undefined; names: readonly string[]; any: string; onPick: (name: string | undefined) => void;
  testid?: string; disabled?: boolean; display?: (name: string) => string;
}) {
  return (
    <Field label={label}>
      <select class="select" value={value ?? ''} disabled={disabled} onChange={(e) => onPick((e.target as HTMLSelectElement).value || undefined)} data-testid={testid}>
        <option value="">{any}</option>
        {names.map((n) => (
          <option key={n} value={n}>
            {display(n)}
          </option>
        ))}
      </select>
    </Field>
  );
}

export function Icon({ name, size = 18 }: { name: IconName; size?: number }) {
  return (
    <svg class="icon" width={size} height={size} viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="1.8" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true">
      <path d={PATHS[name]} />
    </svg>
  );
}
