/**
 * What the bench reads about its servers from /proc (Linux): CPU time (utime + stime of
 * /proc/<pid>/stat) and private memory (Private_Clean + Private_Dirty of smaps_rollup), read from
 * outside so the processes measured do no work for it. Elsewhere every figure is null.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of utime and stime: `getconf CLK_TCK`, 100 on Linux almost always. */
const CLK_TCK = (() => {
  try {
    const v = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());
    return Number.isFinite(v) && v > 0 ? v : 100;
  } catch {
    return 100;
  }
})();

/** The fields after the command name, which may itself hold spaces and parentheses. */
function statFields(pid: number): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** CPU time the process has used (user + system), in microseconds; undefined once it is gone. */
export function cpuMicros(pid: number): number | undefined {
  // After the name: state (0), ppid (1), ..., utime (11), stime (12).
  const f = statFields(pid);
  if (!f) return undefined;
  return ((Number(f[11]) + Number(f[12])) * 1e6) / CLK_TCK;
}

/** Resident pages of this process alone, in MB: RSS also counts pages shared with every other node process. */
export const privateMb = (pid: number): number | undefined => memoryMb(pid)?.private;

/** Every process below `pid` (children, grandchildren ...), by walking the ppid of /proc/<n>/stat. */
export function descendants(pid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return [];
  }
  const children = new Map<number, number[]>();
  for (const e of entries) {
    const ppid = Number(statFields(Number(e))?.[1]);
    if (Number.isFinite(ppid)) children.set(ppid, [...(children.get(ppid) ?? []), Number(e)]);
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) out.push(c), walk(c);
  };
  walk(pid);
  return out;
}

/** The command line of a process, for telling children apart. */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return '';
  }
}

/** CPU used by named processes between `start()` and `end()`, in microseconds (null: not measurable). */
export interface CpuWindow {
  start(): void;
  end(): Record<string, number | null>;
}

export function cpuWindow(pids: Readonly<Record<string, number | undefined>>): CpuWindow {
  let before: Record<string, number | undefined> = {};
  const read = () => Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, pid ? cpuMicros(pid) : undefined]));
  return {
    start: () => void (before = read()),
    end: () => {
      const after = read();
      return Object.fromEntries(
        Object.keys(pids).map((name) => {
          const a = before[name];
          const b = after[name];
          return [name, a === undefined || b === undefined ? null : b - a];
        }),
      );
    },
  };
}

/** Resident memory (RSS, and the private part of it) of a process, in MB, from outside it. */
export function memoryMb(pid: number): { rss: number; private: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const sum = (re: RegExp) => [...text.matchAll(re)].reduce((s, m) => s + Number(m[1]), 0);
    const mb = (kb: number) => Math.round((kb / 1024) * 10) / 10;
    return { rss: mb(sum(/^Rss:\s+(\d+) kB/gm)), private: mb(sum(/^Private_(?:Clean|Dirty):\s+(\d+) kB/gm)) };
  } catch {
    return undefined;
  }
}
