/**
 * `queenctl completion bash|zsh|fish|powershell`: a completion script generated from the command
 * tree itself, so it never drifts from the verbs and flags (docs/cli.md#shell-completion).
 */
import type { Command } from 'commander';
import { userError } from '../errors.js';

/** Every command path ('' for the root) with the words that may follow it. */
function tree(root: Command): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const walk = (c: Command, path: string, inherited: string[]): void => {
    const flags = c.options.map((o) => o.long).filter((f): f is string => typeof f === 'string');
    const all = [...inherited, ...flags];
    out.set(path, [...c.commands.flatMap((sub) => [sub.name(), ...sub.aliases()]), ...all]);
    for (const sub of c.commands) for (const n of [sub.name(), ...sub.aliases()]) walk(sub, path ? `${path} ${n}` : n, all);
  };
  walk(root, '', []);
  return out;
}

function bash(root: Command): string {
  const t = tree(root);
  const entries = [...t].map(([k, v]) => `  [${JSON.stringify(k)}]=${JSON.stringify(v.join(' '))}`).join('\n');
  return `# queenctl bash completion (queenctl completion bash)
declare -A _queenctl_words=(
${entries}
)
_queenctl() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" w i next
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ $w == -* ]] && continue
    next="\${path:+$path }$w"
    [[ -n "\${_queenctl_words[$next]+x}" ]] && path="$next"
  done
  COMPREPLY=($(compgen -W "\${_queenctl_words[$path]}" -- "$cur"))
}
complete -F _queenctl queenctl
`;
}

function fish(root: Command): string {
  const lines = ['# queenctl fish completion (queenctl completion fish)', 'complete -c queenctl -f'];
  for (const sub of root.commands) {
    lines.push(`complete -c queenctl -n __fish_use_subcommand -a ${sub.name()} -d ${JSON.stringify(sub.description())}`);
    for (const s2 of sub.commands) lines.push(`complete -c queenctl -n '__fish_seen_subcommand_from ${sub.name()}' -a ${s2.name()} -d ${JSON.stringify(s2.description())}`);
  }
  for (const o of root.options) if (o.long) lines.push(`complete -c queenctl -l ${o.long.slice(2)} -d ${JSON.stringify(o.description)}`);
  return `${lines.join('\n')}\n`;
}

function powershell(root: Command): string {
  const words = root.commands.map((c) => `'${c.name()}'`).join(',');
  return `# queenctl PowerShell completion (queenctl completion powershell)
Register-ArgumentCompleter -Native -CommandName queenctl -ScriptBlock {
  param($wordToComplete)
  @(${words}) | Where-Object { $_ -like "$wordToComplete*" } | ForEach-Object { [System.Management.Automation.CompletionResult]::new($_, $_, 'ParameterValue', $_) }
}
`;
}

export function registerCompletion(program: Command): void {
  program.command('completion <shell>').description('Print a completion script: bash | zsh | fish | powershell').action((shell: string) => {
    const root = program;
    if (shell === 'bash') process.stdout.write(bash(root));
    else if (shell === 'zsh') process.stdout.write(`#compdef queenctl\nautoload -U +X bashcompinit && bashcompinit\n${bash(root)}`);
    else if (shell === 'fish') process.stdout.write(fish(root));
    else if (shell === 'powershell') process.stdout.write(powershell(root));
    else throw userError(`unsupported shell "${shell}" (bash, zsh, fish, powershell)`);
  });
}
