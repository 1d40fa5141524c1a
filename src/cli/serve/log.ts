/**
 * Structured logs: one JSON object per line on stdout, one line per event. Nothing secret is
 * ever passed in (no headers, no query strings, no API keys), and Redis URLs are redacted by
 * their callers.
 */

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Logger {
  log(level: LogLevel, event: string, fields?: Record<string, unknown>): void;
  info(event: string, fields?: Record<string, unknown>): void;
  warn(event: string, fields?: Record<string, unknown>): void;
  error(event: string, fields?: Record<string, unknown>): void;
}

export function createLogger(stream: NodeJS.WritableStream, minimum: LogLevel = 'info'): Logger {
  const threshold = LOG_LEVELS.indexOf(minimum);
  const log: Logger['log'] = (level, event, fields = {}) => {
    if (LOG_LEVELS.indexOf(level) < threshold) return;
    stream.write(
      `${JSON.stringify({ time: new Date().toISOString(), level, event, ...fields }, replacer)}\n`,
    );
  };
  return {
    log,
    info: (event, fields) => log('info', event, fields),
    warn: (event, fields) => log('warn', event, fields),
    error: (event, fields) => log('error', event, fields),
  };
}

/** Errors as their message (and code), Infinity as a string: JSON has neither. */
function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const code = (value as NodeJS.ErrnoException).code;
    return code === undefined ? value.message : `${code}: ${value.message}`;
  }
  if (value === Number.POSITIVE_INFINITY) return 'Infinity';
  return value;
}
