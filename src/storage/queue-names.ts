/**
 * Default namespace and task of a queue created by a push (docs/http-api.md#model): a dotted
 * name `ns.task[.…]` gives its first two parts, a plain name is its own namespace. Every backend
 * creates queues with them.
 */
export function namesFromQueue(name: string): { namespace: string; task: string } {
  const parts = name.split('.');
  if (parts.length === 1) return { namespace: name, task: '' };
  return { namespace: parts[0]!, task: parts[1]! };
}
