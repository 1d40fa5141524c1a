export async function inspectCommand(_argv: readonly string[]): Promise<number> {
  return 1;
}
export async function resetCommand(_argv: readonly string[]): Promise<number> {
  return 1;
}
