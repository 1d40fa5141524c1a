export async function serveCommand(_argv: readonly string[]): Promise<number> {
  return 1;
}
