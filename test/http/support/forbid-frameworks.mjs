// Loaded with `node --import`: any attempt to load express or fastify fails loudly.
import { register } from 'node:module';

const hook = `export async function resolve(specifier, context, next) {
  if (/^(express|fastify)(\\/|$)/.test(specifier)) throw new Error('framework loaded: ' + specifier);
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);
