// A small TOML reader: enough of TOML 1.0 (and 1.1's inline tables over several lines, which
// Codex's documentation uses for `[otel] exporter`) to read any config.toml Codex reads, so that
// the `[otel]` table can be found in a real one: tables and arrays of tables, bare, quoted and
// dotted keys, the four kinds of strings, numbers, booleans, dates and times (kept as text),
// arrays and inline tables, comments. What is not TOML is an error with its line, never a guess.
// Values come out as plain objects, arrays, strings, numbers and booleans.

export type TomlValue = string | number | boolean | TomlValue[] | TomlTable;
export interface TomlTable {
  [key: string]: TomlValue;
}

export class TomlError extends Error {}

const BARE = /[A-Za-z0-9_-]/;
/** TOML's one-letter escapes, and at the same index what each stands for. */
const ESCAPES = ['btnfre"\\', '\b\t\n\f\r\x1b"\\'];

export function parseToml(text: string): TomlTable {
  return new Reader(text.replace(/^\uFEFF/, '')).document();
}

export const isTable = (v: TomlValue | undefined): v is TomlTable => typeof v === 'object' && !Array.isArray(v);

class Reader {
  private at = 0;
  constructor(private readonly s: string) {}

  document(): TomlTable {
    const root: TomlTable = {};
    let table = root;
    for (;;) {
      this.skipBlank(true);
      if (this.at >= this.s.length) return root;
      if (this.s[this.at] === '[') table = this.header(root);
      else {
        this.keyValue(table);
        this.endOfLine();
      }
    }
  }

  private fail(message: string): never {
    const line = this.s.slice(0, this.at).split('\n').length;
    throw new TomlError(`line ${line}: ${message}`);
  }

  /** Spaces and tabs, comments, and with `lines` newlines too. */
  private skipBlank(lines: boolean): void {
    for (;;) {
      const c = this.s[this.at];
      if (c === ' ' || c === '\t' || (lines && (c === '\n' || c === '\r'))) this.at++;
      else if (c === '#') while (this.at < this.s.length && this.s[this.at] !== '\n') this.at++;
      else return;
    }
  }

  private endOfLine(): void {
    this.skipBlank(false);
    if (this.at >= this.s.length) return;
    if (this.s.startsWith('\r\n', this.at)) this.at += 2;
    else if (this.s[this.at] === '\n') this.at++;
    else this.fail(`unexpected "${this.s[this.at]}" after a value (one key = value a line)`);
  }

  private header(root: TomlTable): TomlTable {
    const array = this.s.startsWith('[[', this.at);
    const close = array ? ']]' : ']';
    this.at += close.length;
    const keys = this.key();
    if (!this.s.startsWith(close, this.at)) this.fail(`a table header must end with ${close}`);
    this.at += close.length;
    this.endOfLine();
    const [parent, last] = this.walk(root, keys);
    if (array) {
      const list = parent[last] ?? (parent[last] = []);
      if (!Array.isArray(list)) this.fail(`${keys.join('.')} is not an array of tables`);
      const t: TomlTable = {};
      list.push(t);
      return t;
    }
    const existing = parent[last];
    if (existing !== undefined && !isTable(existing)) this.fail(`${keys.join('.')} is already a value`);
    return existing ?? (parent[last] = {});
  }

  /** The table holding the last of `keys` (made when missing; of an array of tables, its last), and that key. */
  private walk(from: TomlTable, keys: string[]): [TomlTable, string] {
    let t = from;
    for (const k of keys.slice(0, -1)) {
      let next = t[k];
      if (next === undefined) next = t[k] = {};
      if (Array.isArray(next)) next = next[next.length - 1];
      if (!isTable(next)) this.fail(`${k} is already a value, not a table`);
      t = next;
    }
    return [t, keys[keys.length - 1]];
  }

  private keyValue(table: TomlTable): void {
    const keys = this.key();
    if (this.s[this.at] !== '=') this.fail(`expected "=" after the key ${keys.join('.')}`);
    this.at++;
    this.skipBlank(false);
    const value = this.value();
    const [parent, last] = this.walk(table, keys);
    if (parent[last] !== undefined) this.fail(`${keys.join('.')} is defined twice`);
    parent[last] = value;
  }

  /** A dotted key; the reader stops on what follows it (=, ], ]]). */
  private key(): string[] {
    const keys: string[] = [];
    for (;;) {
      this.skipBlank(false);
      const c = this.s[this.at];
      if (c === '"') keys.push(this.basicString());
      else if (c === "'") keys.push(this.literalString());
      else {
        const start = this.at;
        while (this.at < this.s.length && BARE.test(this.s[this.at])) this.at++;
        if (this.at === start) this.fail(c === undefined ? 'a key is missing' : `unexpected "${c}" in a key`);
        keys.push(this.s.slice(start, this.at));
      }
      this.skipBlank(false);
      if (this.s[this.at] !== '.') return keys;
      this.at++;
    }
  }

  private value(): TomlValue {
    const c = this.s[this.at];
    if (this.s.startsWith('"""', this.at)) return this.multiline('"""');
    if (this.s.startsWith("'''", this.at)) return this.multiline("'''");
    if (c === '"') return this.basicString();
    if (c === "'") return this.literalString();
    if (c === '[') return this.items<TomlValue[]>(']', [], (out) => out.push(this.value()));
    if (c === '{') return this.items<TomlTable>('}', {}, (out) => this.keyValue(out));
    const m = /^(?:\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}[0-9:.Z+-]*|[0-9A-Za-z_+.:-]+)/.exec(
      this.s.slice(this.at, this.at + 64),
    );
    if (!m) this.fail(c === undefined || c === '\n' ? 'a value is missing' : `unexpected "${c}" where a value starts`);
    this.at += m[0].length;
    const word = m[0].trimEnd();
    if (word === 'true' || word === 'false') return word === 'true';
    if (/^[+-]?(?:inf|nan)$/.test(word))
      return Number(word.replace(/^\+/, '').replace('inf', 'Infinity').replace('nan', 'NaN'));
    if (/^[+-]?(?:0x[0-9A-Fa-f_]+|0o[0-7_]+|0b[01_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d[\d_]*)?)$/.test(word))
      return Number(word.replace(/_/g, '').replace(/^\+/, ''));
    if (/^\d{2,4}[-:]/.test(word)) return word; // a date or a time
    return this.fail(`"${word}" is not a TOML value (a string needs quotes)`);
  }

  private basicString(): string {
    this.at++;
    let out = '';
    for (;;) {
      const c = this.s[this.at];
      if (c === undefined || c === '\n' || c === '\r') this.fail('a string is not closed on its line');
      this.at++;
      if (c === '"') return out;
      out += c === '\\' ? this.escape() : c;
    }
  }

  private escape(): string {
    const e = this.s[this.at++];
    const i = ESCAPES[0].indexOf(e);
    if (i >= 0) return ESCAPES[1][i];
    if (e === 'u' || e === 'U' || e === 'x') {
      const n = e === 'u' ? 4 : e === 'U' ? 8 : 2;
      const hex = this.s.slice(this.at, this.at + n);
      if (!new RegExp(`^[0-9A-Fa-f]{${n}}$`).test(hex)) this.fail(`bad \\${e} escape`);
      this.at += n;
      return String.fromCodePoint(parseInt(hex, 16));
    }
    return this.fail(`unknown escape \\${e}`);
  }

  private literalString(): string {
    const end = this.s.indexOf("'", this.at + 1);
    const nl = this.s.indexOf('\n', this.at + 1);
    if (end < 0 || (nl >= 0 && nl < end)) this.fail('a string is not closed on its line');
    const out = this.s.slice(this.at + 1, end);
    this.at = end + 1;
    return out;
  }

  private multiline(quote: '"""' | "'''"): string {
    this.at += 3;
    if (this.s.startsWith('\r\n', this.at)) this.at += 2;
    else if (this.s[this.at] === '\n') this.at++;
    let out = '';
    for (;;) {
      if (this.at >= this.s.length) this.fail(`a ${quote} string is not closed`);
      if (this.s.startsWith(quote, this.at)) {
        // Up to two quotes right before the closing three belong to the string.
        let q = 3;
        while (q < 5 && this.s[this.at + q] === quote[0]) q++;
        out += quote[0].repeat(q - 3);
        this.at += q;
        return out;
      }
      const c = this.s[this.at++];
      if (c === '\\' && quote === '"""') {
        const rest = /^[ \t]*\r?\n[\s]*/.exec(this.s.slice(this.at));
        if (rest)
          this.at += rest[0].length; // a line-ending backslash
        else out += this.escape();
      } else out += c;
    }
  }

  /** An array's or an inline table's items up to `close`, separated by commas (newlines allowed). */
  private items<T>(close: ']' | '}', out: T, item: (out: T) => void): T {
    this.at++;
    for (;;) {
      this.skipBlank(true);
      if (this.s[this.at] === close) {
        this.at++;
        return out;
      }
      item(out);
      this.skipBlank(true);
      if (this.s[this.at] === ',') this.at++;
      else if (this.s[this.at] !== close)
        this.fail(`expected "," or "${close}" in ${close === ']' ? 'an array' : 'an inline table'}`);
    }
  }
}
