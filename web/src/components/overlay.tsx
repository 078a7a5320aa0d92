/** Modal dialogs, a confirmation dialog, a side drawer and toasts. */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { store, useStore } from '../store';
import { Icon } from './ui';

function useEscape(onClose: () => void): void {
  useEffect(() => {
    const h = (e: KeyboardEvent) => {
      if (e.key === 'Escape') onClose();
    };
    document.addEventListener('keydown', h);
    return () => document.removeEventListener('keydown', h);
  }, [onClose]);
}

export function Modal({ title, onClose, children, footer, testid }: { title: string; onClose: () => void; children: ComponentChildren; footer?: ComponentChildren; testid?: string }) {
  useEscape(onClose);
  return (
    <div class="overlay" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <div class="modal" role="dialog" aria-modal="true" aria-label={title} data-testid={testid ?? 'modal'}>
        <div class="modal-head">
          <h2>{title}</h2>
          <button class="icon-btn" onClick={onClose} aria-label="Close">
            <Icon name="close" />
          </button>
        </div>
        <div class="modal-body">{children}</div>
        {footer && <div class="modal-foot">{footer}</div>}
      </div>
    </div>
  );
}

export interface ConfirmProps {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  /** when set, the user must type this text to enable the button */
  typeToConfirm?: string;
  danger?: boolean;
  onConfirm: () => Promise<void> | void;
  onClose: () => void;
}

/** A confirmation dialog; stays open with the error shown if the action fails. */
export function Confirm({ title, children, confirmLabel, typeToConfirm, danger = true, onConfirm, onClose }: ConfirmProps) {
  const [typed, setTyped] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  const ok = typeToConfirm === undefined || typed === typeToConfirm;
  const go = async () => {
    if (!ok || busy) return;
    setBusy(true);
    setError('');
    try {
      await onConfirm();
      onClose();
    } catch (e) {
      setError((e as Error).message);
      setBusy(false);
    }
  };
  return (
    <Modal
      title={title}
      onClose={onClose}
      testid="confirm"
      footer={
        <>
          <button class="btn" onClick={onClose} disabled={busy}>
            Cancel
          </button>
          <button class={`btn ${danger ? 'btn-danger' : 'btn-primary'}`} onClick={go} disabled={!ok || busy} data-testid="confirm-button">
            {busy ? 'Working…' : confirmLabel}
          </button>
        </>
      }
    >
      <div class="confirm-text">{children}</div>
      {typeToConfirm !== undefined && (
        <label class="field">
          <span class="field-label">
            Type <strong class="mono">{typeToConfirm || '(empty name)'}</strong> to confirm
          </span>
          <input ref={input} class="input mono" value={typed} onInput={(e) => setTyped((e.target as HTMLInputElement).value)} onKeyDown={(e) => e.key === 'Enter' && go()} data-testid="confirm-input" />
        </label>
      )}
      {error && <div class="callout callout-bad">{error}</div>}
    </Modal>
  );
}

export function Drawer({ title, subtitle, onClose, children, footer }: { title: ComponentChildren; subtitle?: ComponentChildren; onClose: () => void; children: ComponentChildren; footer?: ComponentChildren }) {
  useEscape(onClose);
  return (
    <div class="overlay overlay-drawer" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <aside class="drawer" role="dialog" aria-modal="true" data-testid="drawer">
        <div class="drawer-head">
          <div>
            <h2>{title}</h2>
            {subtitle && <div class="subtitle">{subtitle}</div>}
          </div>
          <button class="icon-btn" onClick={onClose} aria-label="Close">
            <Icon name="close" />
          </button>
        </div>
        <div class="drawer-body">{children}</div>
        {footer && <div class="drawer-foot">{footer}</div>}
      </aside>
    </div>
  );
}

interface Toast {
  id: number;
  tone: 'good' | 'bad' | 'info';
  text: string;
}

const toasts = store<Toast[]>([]);
let nextId = 1;

export function toast(text: string, tone: Toast['tone'] = 'good'): void {
  const id = nextId++;
  toasts.set((l) => [...l.slice(-3), { id, tone, text }]);
  setTimeout(() => toasts.set((l) => l.filter((t) => t.id !== id)), tone === 'bad' ? 8000 : 4500);
}

export function Toasts() {
  const list = useStore(toasts);
  return (
    <div class="toasts" aria-live="polite">
      {list.map((t) => (
        <div key={t.id} class={`toast toast-${t.tone}`} data-testid="toast">
          <Icon name={t.tone === 'bad' ? 'alert' : 'check'} size={16} />
          <span>{t.text}</span>
        </div>
      ))}
    </div>
  );
}
