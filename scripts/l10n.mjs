// The extension's l10n bundle (l10n/bundle.l10n.json, named by package.json's "l10n"): every
// message the sources pass to `vscode.l10n.t` — directly, or through the notifications' `t` (the
// window's side calls vscode.l10n.t: src/views/notifier.ts) — keyed by itself, as translators
// start from it (bundle.l10n.<locale>.json beside it). Read from the TypeScript syntax tree, not
// by a pattern: a call `….t('…')` or `t('…')` whose first argument is a string literal.
//
//   node scripts/l10n.mjs           writes the bundle
//   node scripts/l10n.mjs --check   exits 1, naming what differs, when the bundle is not the sources'
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const BUNDLE = path.join(root, 'l10n', 'bundle.l10n.json');

/** Every `.ts` file under `dir`. */
function sources(dir) {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) =>
      e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
    );
}

/** The messages of one file: the first argument of each `t(…)` call that is a string literal. */
function messagesOf(file) {
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found = [];
  const visit = (node) => {
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const name = ts.isIdentifier(callee)
        ? callee.text
        : ts.isPropertyAccessExpression(callee)
          ? callee.name.text
          : null;
      const [first] = node.arguments;
      if (name === 't' && first && (ts.isStringLiteral(first) || ts.isNoSubstitutionTemplateLiteral(first)))
        found.push(first.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The bundle the sources make: each message keyed by itself, in a stable order. */
export function bundleFromSources() {
  const messages = [...new Set(sources(path.join(root, 'src')).flatMap(messagesOf))].sort();
  return Object.fromEntries(messages.map((m) => [m, m]));
}

const text = (bundle) => `${JSON.stringify(bundle, null, 2)}\n`;

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const wanted = bundleFromSources();
  if (process.argv.includes('--check')) {
    const have = fs.existsSync(BUNDLE) ? JSON.parse(fs.readFileSync(BUNDLE, 'utf8')) : {};
    const missing = Object.keys(wanted).filter((k) => !(k in have));
    const extra = Object.keys(have).filter((k) => !(k in wanted));
    if (missing.length || extra.length || text(have) !== text(wanted)) {
      console.error(
        `l10n/bundle.l10n.json is not the sources' (run npm run l10n): ${missing.length} missing, ${extra.length} no longer used` +
          [...missing.map((m) => `\n  + ${m}`), ...extra.map((m) => `\n  - ${m}`)].join(''),
      );
      process.exit(1);
    }
    console.log(`l10n/bundle.l10n.json: ${Object.keys(wanted).length} messages, as the sources have them`);
  } else {
    fs.mkdirSync(path.dirname(BUNDLE), { recursive: true });
    fs.writeFileSync(BUNDLE, text(wanted));
    console.log(`wrote l10n/bundle.l10n.json: ${Object.keys(wanted).length} messages`);
  }
}
