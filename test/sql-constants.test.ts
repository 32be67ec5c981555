// SQL that a test can hold: each statement is a named constant at module level, or the text returned
// by a module-level function whose name ends in `Sql` (a statement built from its arguments), and
// these come before the module's other functions. This parses every .ts file of server/ and cli/ with
// the TypeScript compiler and fails on a statement written inside any other function, and on any
// statement in the HTTP layer (server/api/), whose routes call the modules that own the tables.
import { describe, expect, it } from 'vitest';
import ts from 'typescript';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sourceFiles } from './support/source-files.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** A literal that starts a statement: a keyword followed by more text ('DELETE' alone is an HTTP method). */
const STATEMENT =
  /^\s*\(?\s*(SELECT|INSERT|UPDATE|DELETE|WITH|COPY|TRUNCATE|CREATE|ALTER|DROP|LOCK|VACUUM|ANALYZE|NOTIFY|LISTEN|UNLISTEN|BEGIN|COMMIT|ROLLBACK|SET|SHOW|EXPLAIN|REFRESH|CALL)\s+\S/;

const SQL_BUILDER = /(Sql|SQL)$/;

function literalText(node: ts.Node): string | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateExpression(node))
    return node.head.text + node.templateSpans.map((s) => ` x ${s.literal.text}`).join('');
  return undefined;
}

/** The module-level statement a node sits in, and whether a function lies between the two. */
function topLevel(node: ts.Node): { statement: ts.Node; insideFunction: boolean } {
  let insideFunction = false;
  let n = node;
  for (; !ts.isSourceFile(n.parent); n = n.parent) if (ts.isFunctionLike(n)) insideFunction = true;
  return { statement: n, insideFunction: insideFunction || ts.isFunctionDeclaration(n) || ts.isClassDeclaration(n) };
}

function declaredName(statement: ts.Node): string {
  if (ts.isFunctionDeclaration(statement)) return statement.name?.text ?? '';
  if (ts.isVariableStatement(statement))
    return statement.declarationList.declarations.map((d) => d.name.getText()).join(',');
  return '';
}

/** A module-level function or class that is not a SQL builder: SQL declared after it is not at the top. */
function isOtherFunction(statement: ts.Statement): boolean {
  if (ts.isClassDeclaration(statement)) return true;
  return ts.isFunctionDeclaration(statement) && !SQL_BUILDER.test(statement.name?.text ?? '');
}

export interface Finding {
  line: number;
  problem: 'inside a function' | 'below a function';
  sql: string;
}

export function inlineStatements(fileName: string, source: string): Finding[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const firstFunction = file.statements.findIndex(isOtherFunction);
  const findings: Finding[] = [];
  const visit = (node: ts.Node): void => {
    const text = literalText(node);
    if (text !== undefined && STATEMENT.test(text)) {
      const { statement, insideFunction } = topLevel(node);
      const builder = SQL_BUILDER.test(declaredName(statement));
      const index = file.statements.indexOf(statement as ts.Statement);
      const problem =
        insideFunction && !builder
          ? 'inside a function'
          : firstFunction >= 0 && index > firstFunction
            ? 'below a function'
            : undefined;
      if (problem) {
        const line = file.getLineAndCharacterOfPosition(node.getStart()).line + 1;
        findings.push({ line, problem, sql: text.trim().replace(/\s+/g, ' ').slice(0, 60) });
      }
      return; // a statement's interpolated fragments belong to it
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return findings;
}

describe('the scanner', () => {
  it('finds a statement inside a function, and below one', () => {
    const source = [
      "const LIST = 'SELECT id FROM topics WHERE tenant_id = $1';",
      'export function listSql(filtered: boolean) { return `SELECT id FROM topics ${filtered ? "WHERE key = $2" : ""}`; }',
      'export async function list(em) { return query(em, `DELETE FROM topics WHERE id = $1`, []); }',
      "const LATE = 'UPDATE topics SET name = $2 WHERE id = $1';",
      "const method = 'DELETE';",
    ].join('\n');
    expect(inlineStatements('x.ts', source)).toEqual([
      { line: 3, problem: 'inside a function', sql: 'DELETE FROM topics WHERE id = $1' },
      { line: 4, problem: 'below a function', sql: 'UPDATE topics SET name = $2 WHERE id = $1' },
    ]);
  });
});

/** Every SQL statement literal of a file, wherever it sits. */
function statements(source: string): string[] {
  const file = ts.createSourceFile('x.ts', source, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    const text = literalText(node);
    if (text !== undefined && STATEMENT.test(text)) found.push(text.trim().slice(0, 60));
    else ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

describe('SQL statements', () => {
  it('are not written in the HTTP layer: routes call the modules that own the tables', () => {
    const found = sourceFiles('server/api').flatMap((file) =>
      statements(readFileSync(join(ROOT, file), 'utf8')).map((sql) => `${file}: ${sql}`),
    );
    expect(found).toEqual([]);
  });

  it('are named at the top of their modules', () => {
    const found = ['server', 'cli'].flatMap((dir) =>
      sourceFiles(dir).flatMap((file) =>
        inlineStatements(file, readFileSync(join(ROOT, file), 'utf8')).map(
          (f) => `${file}:${f.line} ${f.problem}: ${f.sql}`,
        ),
      ),
    );
    expect(found).toEqual([]);
  });
});
