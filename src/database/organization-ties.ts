/**
 * Which tables a statement reads without tying their `organization_id` to the caller's organization
 * ($1). A table is tied by an equality with $1 (`w.organization_id = $1`, or unqualified inside the
 * table's own SELECT), by an equality with a tied table (`m.organization_id = w.organization_id`),
 * through the output column of a CTE or a subquery that selects a tied one (`SELECT w.organization_id
 * ... ) AS page`, `m.organization_id AS aggregate_organization_id`), by `JOIN ... USING
 * (organization_id, ...)`, or, inserted into, by $1 as its organization_id. An equality counts only
 * as one of the ANDs of a WHERE, ON or HAVING, and a subquery's condition ties the subquery's rows,
 * never the outer query's. A check of the text, against slips: a table named where the check
 * cannot tell how it is read counts as untied.
 */

interface Token {
  text: string;
  at: number;
}

/** A parenthesised group; the whole statement is the outermost one. */
interface Group {
  /** Token index of the opening parenthesis (-1 for the statement). */
  open: number;
  /** Token index of the closing one. */
  close: number;
  parent?: Group;
  /** Holds a statement of its own (SELECT, WITH, INSERT, ...). */
  query: boolean;
}

/** A row source of a FROM, a JOIN, an INSERT INTO or an UPDATE. */
interface Item {
  id: number;
  kind: 'table' | 'cte' | 'subquery' | 'function';
  name: string;
  alias: string;
  /** Token index of its name, or of the opening parenthesis of a subquery. */
  index: number;
  scope: string;
  /** What a CTE reference or a subquery selects from. */
  body?: Group;
}

/** What a column reference stands for: a table's organization_id or a CTE's or subquery's column. */
interface Node {
  node: string;
  /** The row source (-1 for $1). */
  item: number;
  /** The query that names the row source ('' for $1). */
  scope: string;
}

const words = (list: string): ReadonlySet<string> => new Set(list.trim().split(/\s+/));
const QUERY_STARTS = words('select with insert update delete values');
const SET_OPERATIONS = words('union except intersect');
const EXPRESSIONS_WITH_FROM = words('extract substring trim overlay position');
const NOT_AN_ALIAS = words(`on where join left right inner outer cross full natural using group order limit
  offset union except intersect window having set returning values select with and or lateral for fetch when
  then else end is not in do tablesample`);
const CLAUSE_ENDS = words('from where group order limit on having window returning');
/** Where an AND chain that filters rows starts, what breaks it, and what ends it. */
const CHAIN_STARTS = words('where on having');
const CHAIN_BREAKS = words('or not select set when then else case returning values by ,');
const CHAIN_ENDS = words(`group order limit offset union except intersect join left right cross inner full
  natural where returning window having on then end`);
const ORGANIZATION_COLUMN = /organization_id$/;
/** Around an operand of `=`, what makes it part of a larger expression. */
const OPERATORS = words(':: . [ ] + - * / || %');
const NAME = /^[a-z_]/;

/** Lower case, comments dropped, literals emptied, quoted identifiers unquoted. */
function tokenize(text: string): Token[] {
  const clean = text
    .replace(/--[^\n]*|'(?:[^']|'')*'|"([^"]*)"/g, (found, quoted?: string) =>
      found.startsWith('--') ? ' ' : found.startsWith("'") ? "''" : ` ${quoted} `,
    )
    .toLowerCase();
  return [...clean.matchAll(/::|=>|<>|<=|>=|!=|''|\$\d+|[a-z_][a-z0-9_]*|\S/g)].map((match) => ({
    text: match[0],
    at: match.index,
  }));
}

class Statement {
  private readonly tokens: Token[];
  /** Per token: the innermost group it is inside of (a parenthesis belongs to the group around it). */
  private readonly groupOf: Group[] = [];
  /** Per token: the query it belongs to, and which branch of a UNION. */
  private readonly scopeOf: string[] = [];
  private readonly opened = new Map<number, Group>();
  private readonly top: Group;
  private readonly items: Item[] = [];
  private readonly ctes = new Map<string, Group>();
  /** node -> the nodes tied when it is. */
  private readonly ties = new Map<string, Set<string>>();
  private readonly itemsIn = new Map<string, Item[]>();
  private readonly itemAt = new Set<number>();
  private readonly unclear: string[] = [];
  private readonly selected = new Map<Group, ReturnType<Statement['readOutputs']>>();

  constructor(
    text: string,
    private readonly tables: ReadonlySet<string>,
  ) {
    this.tokens = tokenize(text);
    this.top = { open: -1, close: this.tokens.length, query: true };
    this.findGroups();
    this.findCtes();
    this.findItems();
    this.findLinks();
  }

  /** The first table read without a tie, or named where the check cannot tell how it is read. */
  firstUntied(): string | undefined {
    if (this.unclear.length > 0) return this.unclear[0];
    const tied = new Set(['$1']);
    const reached = ['$1'];
    for (let node = reached.pop(); node !== undefined; node = reached.pop()) {
      for (const next of this.ties.get(node) ?? []) {
        if (!tied.has(next)) {
          tied.add(next);
          reached.push(next);
        }
      }
    }
    return this.items.find(
      (item) => item.kind === 'table' && this.tables.has(item.name) && !tied.has(`#${item.id}`),
    )?.name;
  }

  /** When `from` is tied, so is `to`. */
  private tie(from: string, to: string): void {
    if (!this.ties.has(from)) this.ties.set(from, new Set());
    this.ties.get(from)!.add(to);
  }

  private text(index: number): string {
    return this.tokens[index]?.text ?? '';
  }

  private findGroups(): void {
    const stack: Group[] = [this.top];
    /** Per group: the query it is part of, and that query's current branch. */
    const queryOf = new Map<Group, Group>([[this.top, this.top]]);
    const scopes = new Map<Group, { branch: number; scope: string }>([
      [this.top, { branch: 0, scope: '-1:0' }],
    ]);
    for (const [index, token] of this.tokens.entries()) {
      if (token.text === ')' && stack.length > 1) stack.pop()!.close = index;
      const group = stack[stack.length - 1];
      const query = queryOf.get(group)!;
      const current = scopes.get(query)!;
      this.groupOf.push(group);
      this.scopeOf.push(current.scope);
      if (SET_OPERATIONS.has(token.text) && group === query) {
        current.branch += 1;
        current.scope = `${query.open}:${current.branch}`;
      }
      if (token.text === '(') {
        const query = QUERY_STARTS.has(this.text(index + 1));
        const inner: Group = { open: index, close: this.tokens.length, parent: group, query };
        this.opened.set(index, inner);
        queryOf.set(inner, query ? inner : queryOf.get(group)!);
        if (query) scopes.set(inner, { branch: 0, scope: `${index}:0` });
        stack.push(inner);
      }
    }
  }

  /** The index after the group opened at `index` (or `index` itself when no group opens there). */
  private after(index: number): number {
    const group = this.opened.get(index);
    return group ? group.close + 1 : index;
  }

  /** The query around the one at token `index`, if any. */
  private outer(scope: string): string | undefined {
    const open = Number(scope.split(':')[0]);
    return open < 0 ? undefined : this.scopeOf[open];
  }

  private findCtes(): void {
    for (let index = 1; index < this.tokens.length; index += 1) {
      if (!['with', ','].includes(this.text(index - 1)) || this.text(index + 1) !== 'as') continue;
      let body = index + 2;
      while (['not', 'materialized'].includes(this.text(body))) body += 1;
      const group = this.opened.get(body);
      if (group?.query) this.ctes.set(this.text(index), group);
    }
  }

  private findItems(): void {
    for (const [index, token] of this.tokens.entries()) {
      if (!['from', 'join', 'into', 'update'].includes(token.text) || this.fromOfExpression(index)) continue;
      const insert = token.text === 'into';
      let next = this.readItem(index + 1, insert);
      while (!insert && next !== undefined && this.text(next) === ',') next = this.readItem(next + 1, false);
    }
  }

  /** `extract(hour FROM ...)`, `a IS DISTINCT FROM b`: no row source follows. */
  private fromOfExpression(index: number): boolean {
    if (this.text(index) !== 'from') return false;
    const group = this.groupOf[index];
    return (
      this.text(index - 1) === 'distinct' ||
      (!group.query && group.open >= 0 && EXPRESSIONS_WITH_FROM.has(this.text(group.open - 1)))
    );
  }

  /** Reads the row source at `index`; returns the index after it, or undefined when none starts there. */
  private readItem(start: number, insert: boolean): number | undefined {
    let index = start;
    while (['lateral', 'only'].includes(this.text(index))) index += 1;
    const head = this.text(index);
    let kind: Item['kind'] = 'table';
    let body: Group | undefined;
    let next: number;
    if (head === '(') {
      kind = 'subquery';
      body = this.opened.get(index)?.query ? this.opened.get(index) : undefined;
      next = this.after(index);
    } else if (NAME.test(head) && head !== 'set' && this.text(index + 1) !== '.') {
      next = index + 1;
      if (!insert && this.text(next) === '(') {
        kind = 'function';
        next = this.after(next);
        if (this.text(next) === 'with' && this.text(next + 1) === 'ordinality') next += 2;
      } else if (this.ctes.has(head)) {
        kind = 'cte';
        body = this.ctes.get(head);
      }
    } else {
      return undefined;
    }
    if (this.text(next) === 'as') next += 1;
    let alias = kind === 'subquery' ? '' : head;
    if (NAME.test(this.text(next)) && !NOT_AN_ALIAS.has(this.text(next))) {
      alias = this.text(next);
      next += 1;
    }
    const item: Item = {
      id: this.items.length,
      kind,
      name: head,
      alias,
      index,
      scope: this.scopeOf[index],
      body,
    };
    this.items.push(item);
    if (kind === 'table') this.itemAt.add(index);
    this.itemsIn.set(item.scope, [...(this.itemsIn.get(item.scope) ?? []), item]);
    if (this.text(next) !== '(') return next;
    if (insert) this.linkInserted(item, next);
    return this.after(next);
  }

  /** The comma-separated parts of the group opened at `open`. */
  private parts(open: number): number[][] {
    const group = this.opened.get(open);
    const parts: number[][] = [[]];
    for (let index = open + 1; group && index < group.close; index += 1) {
      if (this.text(index) === ',' && this.groupOf[index] === group) parts.push([]);
      else parts[parts.length - 1].push(index);
    }
    return parts;
  }

  /** The items of the SELECT list of the SELECT at `select`, each as its tokens at the list's level. */
  private selectList(select: number): number[][] {
    const group = this.groupOf[select];
    const parts: number[][] = [[]];
    for (let index = select + 1; index < group.close && index < this.tokens.length; index += 1) {
      const level = this.groupOf[index] === group;
      if (level && (CLAUSE_ENDS.has(this.text(index)) || SET_OPERATIONS.has(this.text(index)))) break;
      if (level && this.text(index) === ',') parts.push([]);
      else parts[parts.length - 1].push(index);
    }
    return parts;
  }

  /** INSERT INTO t (organization_id, ...) SELECT $1, ... (or VALUES ($1, ...)): the rows are the caller's. */
  private linkInserted(item: Item, columns: number): void {
    const position = this.parts(columns).findIndex(
      (part) => part.map((index) => this.text(index)).join('') === 'organization_id',
    );
    const after = this.after(columns);
    const row =
      this.text(after) === 'select'
        ? this.selectList(after)
        : this.text(after) === 'values'
          ? this.parts(after + 1)
          : [];
    const value = row[position];
    if (position >= 0 && value?.length === 1 && this.text(value[0]) === '$1') this.tie('$1', `#${item.id}`);
  }

  /**
   * The output columns of the single SELECT in `body`: name -> the column reference it selects (its
   * token indexes; null: an expression), '*' for every column of its row sources, undefined for a
   * UNION or what the check does not read.
   */
  private outputs(body: Group): Map<string, number[] | null> | '*' | undefined {
    if (!this.selected.has(body)) this.selected.set(body, this.readOutputs(body));
    return this.selected.get(body);
  }

  private readOutputs(body: Group): Map<string, number[] | null> | '*' | undefined {
    let select: number | undefined;
    for (let index = body.open + 1; index < body.close; index += 1) {
      if (this.groupOf[index] !== body) continue;
      if (SET_OPERATIONS.has(this.text(index))) return undefined;
      if (select === undefined && this.text(index) === 'select') select = index;
    }
    if (select === undefined) return undefined;
    const columns = new Map<string, number[] | null>();
    for (const part of this.selectList(select)) {
      const words = part.map((index) => this.text(index));
      if (words.join('') === '*') return '*';
      const named = words.length > 2 && words[words.length - 2] === 'as';
      const expression = named ? part.slice(0, -2) : part;
      const column = expression.length === 1 || (expression.length === 3 && words[1] === '.');
      columns.set(words[words.length - 1], column ? expression : null);
    }
    return columns;
  }

  private hasColumn(item: Item, column: string): boolean {
    if (item.kind === 'table') return column === 'organization_id';
    const outputs = item.body ? this.outputs(item.body) : undefined;
    return outputs === '*' || (outputs?.has(column) ?? false);
  }

  /** What `qualifier.column` (or an unqualified `column`) at token `index` stands for. */
  private resolve(qualifier: string | undefined, column: string, index: number): Node[] {
    for (
      let scope: string | undefined = this.scopeOf[index];
      scope !== undefined;
      scope = this.outer(scope)
    ) {
      const local = this.itemsIn.get(scope) ?? [];
      const found = local.filter((item) =>
        qualifier === undefined ? this.hasColumn(item, column) : item.alias === qualifier,
      );
      if (found.length > 0) return found.flatMap((item) => this.nodeOf(item, column));
    }
    return [];
  }

  /** A row source's column as a node; a CTE's or subquery's is linked both ways to what it selects. */
  private nodeOf(item: Item, column: string): Node[] {
    if (item.kind === 'table')
      return column === 'organization_id' ? [{ node: `#${item.id}`, item: item.id, scope: item.scope }] : [];
    if (!item.body || !this.hasColumn(item, column)) return [];
    const node = `#${item.id}.${column}`;
    const outputs = this.outputs(item.body);
    const selected = outputs === '*' ? undefined : outputs?.get(column);
    if (selected === null) return [];
    const inner =
      selected === undefined
        ? this.resolve(undefined, column, item.body.open + 1)
        : this.text(selected[0]) === '$1'
          ? [{ node: '$1', item: -1, scope: '' }]
          : this.resolve(
              selected.length === 3 ? this.text(selected[0]) : undefined,
              this.text(selected[selected.length - 1]),
              selected[0],
            );
    for (const target of inner) {
      this.tie(node, target.node);
      this.tie(target.node, node);
    }
    return [{ node, item: item.id, scope: item.scope }];
  }

  private findLinks(): void {
    for (const [index, token] of this.tokens.entries()) {
      if (token.text === '=') this.linkEquality(index);
      if (token.text === 'using' && this.text(index + 1) === '(') this.linkUsing(index);
      if (this.tables.has(token.text) && !this.itemAt.has(index)) {
        const qualifier =
          this.text(index + 1) === '.' && this.resolve(token.text, 'organization_id', index).length > 0;
        if (!qualifier) this.unclear.push(token.text);
      }
    }
  }

  /**
   * The operand of the `=` at `equals` on one side: $1 or an organization column, alone (no operator,
   * cast or call around it); `index` is its last token.
   */
  private operand(
    equals: number,
    side: -1 | 1,
  ): { qualifier?: string; column: string; index: number } | undefined {
    const near = equals + side;
    const qualified = this.text(near + side) === '.';
    const first = side === 1 ? near : qualified ? near - 2 : near;
    const last = side === -1 ? near : qualified ? near + 2 : near;
    const column = this.text(last);
    if (column !== '$1' && !ORGANIZATION_COLUMN.test(column)) return undefined;
    if (OPERATORS.has(this.text(first - 1)) || OPERATORS.has(this.text(last + 1))) return undefined;
    if (qualified && !NAME.test(this.text(first))) return undefined;
    return { qualifier: qualified ? this.text(first) : undefined, column, index: last };
  }

  private linkEquality(index: number): void {
    const left = this.operand(index, -1);
    const right = this.operand(index, 1);
    if (!left || !right || (left.column === '$1' && right.column === '$1')) return;
    const start = this.chainStart(index);
    if (start === undefined) return;
    const outerJoined = this.outerJoined(start);
    if (outerJoined === null) return;
    const scope = this.scopeOf[index];
    const nodes = (operand: typeof left): Node[] =>
      operand.column === '$1'
        ? [{ node: '$1', item: -1, scope: '' }]
        : this.resolve(operand.qualifier, operand.column, operand.index);
    for (const a of nodes(left)) {
      for (const b of nodes(right)) {
        // A condition ties the rows of its own query, to $1 or to rows of its own or an outer query;
        // the ON of a LEFT JOIN only those of the source it joins.
        const ties = (node: Node) =>
          node.scope === scope && (outerJoined === undefined || node.item === outerJoined);
        if (ties(b)) this.tie(a.node, b.node);
        if (ties(a)) this.tie(b.node, a.node);
      }
    }
  }

  /** `JOIN x USING (..., organization_id, ...)` ties x and the row source before it, both ways. */
  private linkUsing(index: number): void {
    const columns = this.parts(index + 1).map((part) => part.map((at) => this.text(at)).join(''));
    if (!columns.includes('organization_id')) return;
    const before = (this.itemsIn.get(this.scopeOf[index]) ?? []).filter((item) => item.index < index);
    const [previous, joined] = before.slice(-2);
    if (!previous || !joined) return;
    for (const a of this.nodeOf(joined, 'organization_id')) {
      for (const b of this.nodeOf(previous, 'organization_id')) {
        this.tie(a.node, b.node);
        this.tie(b.node, a.node);
      }
    }
  }

  /**
   * The WHERE, ON or HAVING whose ANDs token `index` is one of (parentheses included), or undefined
   * when it is not one.
   */
  private chainStart(index: number): number | undefined {
    const group = this.groupOf[index];
    for (let back = index - 1; back > group.open; back -= 1) {
      if (this.groupOf[back] !== group) continue;
      if (CHAIN_BREAKS.has(this.text(back))) return undefined;
      if (CHAIN_STARTS.has(this.text(back))) return this.chainGoesOn(index, group) ? back : undefined;
    }
    // A parenthesised condition: it must itself be one of the ANDs around it.
    const nested = !group.query && group.open >= 0 && this.chainGoesOn(index, group);
    return nested ? this.chainStart(group.open) : undefined;
  }

  /**
   * For the ON at `start` of a LEFT JOIN, the row source it joins (its condition leaves the rows
   * before it free); null for a RIGHT or FULL JOIN (it ties nothing); undefined otherwise.
   */
  private outerJoined(start: number): number | null | undefined {
    if (this.text(start) !== 'on') return undefined;
    const group = this.groupOf[start];
    let join = start - 1;
    while (join > group.open && (this.groupOf[join] !== group || this.text(join) !== 'join')) join -= 1;
    const kind = this.text(join - 1) === 'outer' ? this.text(join - 2) : this.text(join - 1);
    if (kind === 'right' || kind === 'full') return null;
    if (kind !== 'left') return undefined;
    return this.items.find(
      (item) => item.index > join && item.index < start && item.scope === this.scopeOf[start],
    )?.id;
  }

  /** No OR follows token `index` in its chain. */
  private chainGoesOn(index: number, group: Group): boolean {
    for (let next = index + 1; next < group.close && next < this.tokens.length; next += 1) {
      if (this.groupOf[next] !== group) continue;
      if (this.text(next) === 'or' || this.text(next) === ',') return false;
      if (CHAIN_ENDS.has(this.text(next))) return true;
    }
    return true;
  }
}

/**
 * The first of `tables` that `text` reads without tying its organization_id to $1, or names where
 * the check cannot tell how it is read; undefined when each one is tied.
 */
export function untiedOrganizationTable(text: string, tables: ReadonlySet<string>): string | undefined {
  // A builder makes the same few texts over and over: each is read once, and kept by its text (a
  // string key costs a native hash, where a digest costs a pass of sha256 on every statement).
  const known = checked.get(text);
  if (known !== undefined && known.tables === tables) return known.untied;
  const untied = new Statement(text, tables).firstUntied();
  if (checked.size >= CHECKED_TEXTS) checked.clear();
  checked.set(text, { tables, untied });
  return untied;
}

const CHECKED_TEXTS = 1_000;
const checked = new Map<string, { tables: ReadonlySet<string>; untied: string | undefined }>();
