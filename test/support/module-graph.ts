/**
 * Import graphs of source files, read with the TypeScript parser. `moduleGraph` follows the
 * runtime graph (type-only imports are erased by the compiler, so it skips them): used to hold
 * runtime-neutral entry points to Web-standard code. `importsOf` lists one file's imports, type
 * ones too: used to hold the layering table in docs/architecture.md, which covers both.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import ts from 'typescript';

export interface ModuleGraph {
  /** Absolute paths of the source files reached, the entry first. */
  readonly files: string[];
  /** Every non-relative specifier imported at run time, with the file that imports it. */
  readonly external: { specifier: string; from: string }[];
}

/** One import of a file: its specifier, and whether the compiler erases it. */
export interface FileImport {
  readonly specifier: string;
  /** `import type`, `export type`, all-`type` named bindings, or `typeof import('…')`. */
  readonly typeOnly: boolean;
}

/** Whether an import or export declaration is erased by the compiler (type-only). */
function typeOnly(node: ts.ImportDeclaration | ts.ExportDeclaration): boolean {
  if (ts.isExportDeclaration(node)) {
    if (node.isTypeOnly) return true;
    const clause = node.exportClause;
    return clause !== undefined && ts.isNamedExports(clause) && clause.elements.every((e) => e.isTypeOnly);
  }
  const clause = node.importClause;
  if (clause === undefined) return false;
  if (clause.isTypeOnly) return true;
  const bindings = clause.namedBindings;
  return (
    clause.name === undefined &&
    bindings !== undefined &&
    ts.isNamedImports(bindings) &&
    bindings.elements.every((e) => e.isTypeOnly)
  );
}

/** Every import of `file`: declarations, re-exports, dynamic `import()` and import types. */
export function importsOf(file: string): FileImport[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const found: FileImport[] = [];
  source.forEachChild(function walk(node) {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) {
      if (node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier))
        found.push({ specifier: node.moduleSpecifier.text, typeOnly: typeOnly(node) });
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push({ specifier: node.arguments[0].text, typeOnly: false });
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      found.push({ specifier: node.argument.literal.text, typeOnly: true });
    }
    node.forEachChild(walk);
  });
  return found;
}

/** The source file a relative specifier names (`./x.js` is compiled from `./x.ts`). */
export function resolveImport(from: string, specifier: string): string {
  return resolve(dirname(from), specifier.replace(/\.js$/, '.ts'));
}

export function moduleGraph(entry: string): ModuleGraph {
  const files: string[] = [];
  const external: { specifier: string; from: string }[] = [];
  const visit = (file: string) => {
    if (files.includes(file)) return;
    files.push(file);
    for (const { specifier, typeOnly } of importsOf(file)) {
      if (typeOnly) continue;
      if (specifier.startsWith('.')) visit(resolveImport(file, specifier));
      else external.push({ specifier, from: file });
    }
  };
  visit(resolve(entry));
  return { files, external };
}
