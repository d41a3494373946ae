/**
 * What the core needs of a logger: structured lines at four levels. The runtime passes its own
 * (Powertools' Logger in Lambda and locally, with per-invocation keys managed by its middleware);
 * the core never appends or removes keys itself.
 */
export interface Logger {
  debug(message: string, ...attributes: Record<string, unknown>[]): void;
  info(message: string, ...attributes: Record<string, unknown>[]): void;
  warn(message: string, ...attributes: Record<string, unknown>[]): void;
  error(message: string, ...attributes: Record<string, unknown>[]): void;
}
