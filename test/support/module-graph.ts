/**
 * The runtime module graph of a source file: every module reached through imports and
 * re-exports that survive compilation (type-only ones are erased), read with the TypeScript
 * parser. Used to hold runtime-neutral entry points to Web-standard code.
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

export function moduleGraph(entry: string): ModuleGraph {
  const files: string[] = [];
  const external: { specifier: string; from: string }[] = [];
  const visit = (file: string) => {
    if (files.includes(file)) return;
    files.push(file);
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    const specifiers: string[] = [];
    source.forEachChild(function walk(node) {
      if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && !typeOnly(node)) {
        if (node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier))
          specifiers.push(node.moduleSpecifier.text);
      } else if (
        ts.isCallExpression(node) &&
        node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        node.arguments[0] !== undefined &&
        ts.isStringLiteral(node.arguments[0])
      ) {
        specifiers.push(node.arguments[0].text);
      }
      node.forEachChild(walk);
    });
    for (const specifier of specifiers) {
      if (specifier.startsWith('.')) visit(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
      else external.push({ specifier, from: file });
    }
  };
  visit(resolve(entry));
  return { files, external };
}
