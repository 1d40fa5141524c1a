// Koa 2, installed under the alias `koa2` beside Koa 3, has the same public API.
declare module 'koa2' {
  import Koa from 'koa';
  export default Koa;
}
