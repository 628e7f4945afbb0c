import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';

/**
 * A deployed migration must keep executing exactly what it executed when it was deployed, so each
 * file is frozen on its own: it imports nothing but typeorm's migration types (no other migration,
 * no helper that can change) and exports nothing but its class, so no later file can lean on it.
 * SQL a migration needs from an earlier one is copied into it. Today's definitions of everything
 * the migrations build are in docs/sql/schema.sql.
 */
const DIRECTORY = join(__dirname, '..', '..', '..', 'migrations');
const TYPEORM_TYPES = ['MigrationInterface', 'QueryRunner'];

const migrationFiles = readdirSync(DIRECTORY)
  .filter((name) => /^\d{13}-[a-z0-9-]+\.ts$/.test(name))
  .sort();

interface Findings {
  imports: string[];
  exports: string[];
}

function findings(name: string): Findings {
  const text = readFileSync(join(DIRECTORY, name), 'utf8');
  const source = ts.createSourceFile(name, text, ts.ScriptTarget.ES2022, true);
  const imports: string[] = [];
  const exports: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const names = node.importClause?.namedBindings;
      const bound =
        names && ts.isNamedImports(names)
          ? names.elements.map((element) => element.name.text)
          : ['(default or namespace import)'];
      const module = node.moduleSpecifier.text;
      for (const binding of bound) imports.push(`${binding} from '${module}'`);
    } else if (ts.isExportDeclaration(node)) {
      exports.push(node.getText());
    } else if (ts.isImportEqualsDeclaration(node)) {
      imports.push(node.getText());
    } else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && node.expression.text === 'require'))
    ) {
      imports.push(node.getText());
    }
    if (
      ts.canHaveModifiers(node) &&
      ts.getModifiers(node)?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword)
    ) {
      const declared = (node as ts.Node & { name?: ts.Node }).name;
      exports.push(declared ? declared.getText() : node.getText());
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { imports, exports };
}

describe('migrations are self-contained', () => {
  it('finds the migration files', () => {
    expect(migrationFiles.length).toBeGreaterThan(20);
  });

  it.each(migrationFiles)("%s imports nothing but typeorm's migration types", (name) => {
    const allowed = TYPEORM_TYPES.map((type) => `${type} from 'typeorm'`);
    const foreign = findings(name).imports.filter((found) => !allowed.includes(found));
    expect({ file: name, foreign }).toEqual({ file: name, foreign: [] });
  });

  it.each(migrationFiles)('%s exports only its migration class', (name) => {
    const timestamp = name.slice(0, 13);
    const { exports } = findings(name);
    expect(exports).toHaveLength(1);
    expect(exports[0]).toMatch(new RegExp(`^[A-Z][A-Za-z0-9]*${timestamp}$`));
  });
});
