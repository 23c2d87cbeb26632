/**
 * Routing predicates: does a destination take an event? Pure functions, no I/O.
 *
 * Topics (`matchesTopic`): a destination's topic entry `*` takes every topic; an entry holding `*`
 * elsewhere is a wildcard pattern in which each `*` stands for any run of characters, the empty run
 * included (`user.*` takes `user.created` and `user.a.b`; `*.created` takes `order.created`); any
 * other entry must equal the topic exactly. Patterns are split once and kept in a bounded cache.
 *
 * Filters (`matchesFilter`, docs: contract-details "Filters") are JSON objects matched against the
 * event's `{id, topic, time, metadata, data}` (other event fields, such as tenant_id, are not
 * visible). The rules, with the choices the contract leaves open:
 *
 * - The keys of one object are ANDed. `{}`, null and undefined match every event; an empty nested
 *   object `{a: {}}` is an empty AND and matches whatever `a` holds, even nothing.
 * - A key starting with `$` is an operator; any other key names a field of the value at hand (at the
 *   top level, of the event). Operators and field keys may sit side by side in one object. There is
 *   no escape for data fields whose names start with `$`.
 * - A nested object without operator keys matches nested fields. Against an array it matches when
 *   one element satisfies all of its field keys (elements that are not objects have no fields);
 *   against a scalar or a missing value every nested field counts as missing.
 * - A scalar matches an equal scalar (===, no type coercion) or an array that contains it. An array
 *   literal matches a deeply equal array, or an array that contains a deeply equal element.
 * - Presence: a field is present when the object has it as an own key and its value is not
 *   `undefined`. A `null` value counts as present: `{$exist: true}` matches `null`, and `{a: null}`
 *   matches only a present null.
 * - A missing field fails every operator except `$exist: false`, `$neq` and `$nin`, which succeed.
 *   `$not` inverts its content, so `{$not: {$gt: 5}}` succeeds on a missing field.
 * - `$eq` is the scalar rule above with deep equality for object and array arguments (so an object
 *   argument means "equal to this object", not "these nested fields"). `$neq` is its negation.
 * - `$in` takes an array: the value equals (deeply) one of its elements, or the value is an array
 *   that shares an element with it (or the array as a whole is one of the elements). `$nin` is the
 *   negation of `$in`.
 * - `$gt $gte $lt $lte` compare a number with a number and a string with a string; mixed types never
 *   compare (no coercion). When both strings are ISO 8601 dates or date-times they compare as
 *   instants (millisecond precision; a date-time without an offset is read as UTC), otherwise by
 *   UTF-16 code units. On an array value, one satisfying element is enough.
 * - `$startsWith` / `$endsWith` take a string and apply to string values (or to any string element
 *   of an array value).
 * - `$or` / `$and` take non-empty arrays of sub-filters, applied to the value at hand (at the top
 *   level, the event; under a field, that field's value). `$not` takes one sub-filter.
 * - Nesting depth: the filter's JSON (objects and arrays alike, the filter object being level 1)
 *   may not be more than FILTER_MAX_DEPTH levels deep.
 * - A filter that `validateFilter` finds fault with matches no event at all (fail closed); the API
 *   validates filters when destinations are written, so this is only a safety net.
 *
 * Compiled filters are cached per filter object (WeakMap): treat a filter object as immutable once
 * it has been matched, or hold the predicate from `compileFilter` yourself.
 */

/** The part of an event a filter sees; an EventRecord fits. */
export interface FilterableEvent {
  id: string;
  topic: string;
  time: string;
  metadata: Record<string, unknown> | null;
  data: unknown;
}

export interface FilterProblem {
  /** Where the problem is, e.g. `filter.data.amount.$gt` or `filter.$or[1]`. */
  path: string;
  message: string;
}

export type EventPredicate = (event: FilterableEvent) => boolean;

/** Maximum nesting of a filter's JSON, counting objects and arrays; the filter object is level 1. */
export const FILTER_MAX_DEPTH = 10;
/** How many distinct wildcard topic patterns stay compiled at once. */
export const TOPIC_PATTERN_CACHE_LIMIT = 1024;

// ---------------------------------------------------------------------------------------------
// Topics

/** Wildcard pattern -> its literal pieces around each `*` (so at least two pieces). */
const topicPatterns = new Map<string, readonly string[]>();

function topicPattern(entry: string): readonly string[] {
  let pieces = topicPatterns.get(entry);
  if (pieces === undefined) {
    pieces = entry.split('*');
    if (topicPatterns.size >= TOPIC_PATTERN_CACHE_LIMIT) {
      // Evict the oldest insertion; destination topic sets are small and stable, so FIFO suffices.
      const oldest = topicPatterns.keys().next();
      if (!oldest.done) topicPatterns.delete(oldest.value);
    }
    topicPatterns.set(entry, pieces);
  }
  return pieces;
}

function wildcardMatch(pieces: readonly string[], topic: string): boolean {
  const first = pieces[0] ?? '';
  const last = pieces[pieces.length - 1] ?? '';
  const end = topic.length - last.length;
  if (end < first.length || !topic.startsWith(first) || !topic.endsWith(last)) return false;
  // Each middle piece at its leftmost place after the previous one: leftmost leaves the most room.
  let pos = first.length;
  for (let i = 1; i < pieces.length - 1; i++) {
    const piece = pieces[i] ?? '';
    if (piece === '') continue;
    const at = topic.indexOf(piece, pos);
    if (at < 0 || at + piece.length > end) return false;
    pos = at + piece.length;
  }
  return true;
}

/** Whether a destination subscribed to `destinationTopics` takes events of `topic`. */
export function matchesTopic(destinationTopics: readonly string[], topic: string): boolean {
  for (const entry of destinationTopics) {
    if (entry === '*' || entry === topic) return true;
    if (entry.includes('*') && wildcardMatch(topicPattern(entry), topic)) return true;
  }
  return false;
}

/** Number of compiled wildcard patterns held (for tests and metrics). */
export function topicPatternCacheSize(): number {
  return topicPatterns.size;
}

// ---------------------------------------------------------------------------------------------
// Filter matching

/** Tests a value; `present` tells a missing field (false) from one that holds a value. */
type Matcher = (value: unknown, present: boolean) => boolean;
type Test = (value: unknown) => boolean;

const NO_FIELDS: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;
const matchEvery: EventPredicate = () => true;
const matchNone: EventPredicate = () => false;
const never: Matcher = () => false;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const keys = Object.keys(ra);
  if (keys.length !== Object.keys(rb).length) return false;
  for (const k of keys) if (!Object.hasOwn(rb, k) || !deepEqual(ra[k], rb[k])) return false;
  return true;
}

/** The value equals `expected`, or is an array with an element equal to it (deeply for containers). */
function equality(expected: unknown): Test {
  if (typeof expected !== 'object' || expected === null) {
    return (v) => v === expected || (Array.isArray(v) && v.includes(expected));
  }
  return (v) => deepEqual(v, expected) || (Array.isArray(v) && v.some((e) => deepEqual(e, expected)));
}

/** `$in`: the value is one of `choices`, or an array sharing an element with them. */
function membership(choices: readonly unknown[]): Test {
  const scalars = new Set<unknown>();
  const containers: unknown[] = [];
  for (const c of choices) {
    if (typeof c === 'object' && c !== null) containers.push(c);
    else scalars.add(c);
  }
  const one = (x: unknown): boolean =>
    typeof x !== 'object' || x === null ? scalars.has(x) : containers.length > 0 && containers.some((c) => deepEqual(c, x));
  return (v) => one(v) || (Array.isArray(v) && v.some(one));
}

/** Applies `test` to a value, or to each element of an array value until one passes. */
function anyElement(test: Test): Test {
  return (v) => test(v) || (Array.isArray(v) && v.some(test));
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$/;

// One-entry memo: an event is matched against many destinations' filters, often on its `time`.
let lastIso = '';
let lastInstant = Number.NaN;

/** Milliseconds since the epoch of an ISO 8601 date or date-time, NaN for anything else. */
function isoInstant(s: string): number {
  if (s === lastIso) return lastInstant;
  let instant = Number.NaN;
  const m = s.length >= 10 && s.length <= 40 ? ISO_8601.exec(s) : null;
  // Date.parse reads a date-time without an offset in the local zone; read it as UTC instead.
  if (m !== null) instant = Date.parse(s.length > 10 && m[1] === undefined ? `${s}Z` : s);
  lastIso = s;
  lastInstant = instant;
  return instant;
}

type Sign = (order: number) => boolean;

const SIGNS: Record<string, Sign> = {
  $gt: (o) => o > 0,
  $gte: (o) => o >= 0,
  $lt: (o) => o < 0,
  $lte: (o) => o <= 0,
};

function order<T extends number | string>(a: T, b: T): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Compares a value with `bound` (value first); see the module comment for the rules. */
function comparison(bound: number | string, sign: Sign): Test {
  if (typeof bound === 'number') return anyElement((v) => typeof v === 'number' && sign(order(v, bound)));
  const boundInstant = isoInstant(bound);
  if (Number.isNaN(boundInstant)) return anyElement((v) => typeof v === 'string' && sign(order(v, bound)));
  return anyElement((v) => {
    if (typeof v !== 'string') return false;
    const instant = isoInstant(v);
    return sign(Number.isNaN(instant) ? order(v, bound) : order(instant, boundInstant));
  });
}

function compileOperator(op: string, arg: unknown): Matcher {
  switch (op) {
    case '$eq': {
      const eq = equality(arg);
      return (v, present) => present && eq(v);
    }
    case '$neq': {
      const eq = equality(arg);
      return (v, present) => !present || !eq(v);
    }
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte': {
      const sign = SIGNS[op];
      if (sign === undefined || (typeof arg !== 'number' && typeof arg !== 'string')) return never;
      const test = comparison(arg, sign);
      return (v, present) => present && test(v);
    }
    case '$in':
    case '$nin': {
      if (!Array.isArray(arg)) return never;
      const test = membership(arg);
      return op === '$in' ? (v, present) => present && test(v) : (v, present) => !present || !test(v);
    }
    case '$startsWith':
    case '$endsWith': {
      if (typeof arg !== 'string') return never;
      const test =
        op === '$startsWith'
          ? anyElement((v) => typeof v === 'string' && v.startsWith(arg))
          : anyElement((v) => typeof v === 'string' && v.endsWith(arg));
      return (v, present) => present && test(v);
    }
    case '$exist':
      if (typeof arg !== 'boolean') return never;
      return (_v, present) => present === arg;
    case '$or':
    case '$and': {
      if (!Array.isArray(arg)) return never;
      const subs = arg.map(compileValue);
      if (op === '$or') {
        return (v, present) => {
          for (const sub of subs) if (sub(v, present)) return true;
          return false;
        };
      }
      return (v, present) => {
        for (const sub of subs) if (!sub(v, present)) return false;
        return true;
      };
    }
    case '$not': {
      const sub = compileValue(arg);
      return (v, present) => !sub(v, present);
    }
    default:
      return never;
  }
}

/** An object of operators and/or field keys, applied to one value. */
function compileCondition(cond: Record<string, unknown>): Matcher {
  const ops: Matcher[] = [];
  const fields: string[] = [];
  const subs: Matcher[] = [];
  for (const key of Object.keys(cond)) {
    if (key.startsWith('$')) ops.push(compileOperator(key, cond[key]));
    else {
      fields.push(key);
      subs.push(compileValue(cond[key]));
    }
  }
  if (ops.length === 0 && fields.length === 0) return () => true;

  const fieldsMatch = (obj: Record<string, unknown>): boolean => {
    for (let i = 0; i < fields.length; i++) {
      const key = fields[i] as string;
      const value = Object.hasOwn(obj, key) ? obj[key] : undefined;
      if (!(subs[i] as Matcher)(value, value !== undefined)) return false;
    }
    return true;
  };

  return (v, present) => {
    for (const op of ops) if (!op(v, present)) return false;
    if (fields.length === 0) return true;
    if (isObject(v)) return fieldsMatch(v);
    if (Array.isArray(v)) {
      for (const el of v) if (fieldsMatch(isObject(el) ? el : NO_FIELDS)) return true;
      return false;
    }
    return fieldsMatch(NO_FIELDS);
  };
}

/** What a filter holds under a field key or inside `$or`/`$and`/`$not`. */
function compileValue(expected: unknown): Matcher {
  if (isObject(expected)) return compileCondition(expected);
  const eq = equality(expected);
  return (v, present) => present && eq(v);
}

const compiled = new WeakMap<object, EventPredicate>();

/**
 * The predicate for a filter, compiled once per filter object. Null, undefined and `{}` match every
 * event; a filter with validation problems matches none.
 */
export function compileFilter(filter: Record<string, unknown> | null | undefined): EventPredicate {
  if (filter === null || filter === undefined) return matchEvery;
  if (typeof filter !== 'object') return matchNone;
  let predicate = compiled.get(filter);
  if (predicate === undefined) {
    predicate = buildPredicate(filter);
    compiled.set(filter, predicate);
  }
  return predicate;
}

function buildPredicate(filter: Record<string, unknown>): EventPredicate {
  if (validateFilter(filter).length > 0) return matchNone;
  if (Object.keys(filter).length === 0) return matchEvery;
  const root = compileCondition(filter);
  return (e) => root({ id: e.id, topic: e.topic, time: e.time, metadata: e.metadata, data: e.data }, true);
}

/** Whether `event` passes a destination's `filter` (null or `{}`: every event passes). */
export function matchesFilter(filter: Record<string, unknown> | null | undefined, event: FilterableEvent): boolean {
  return compileFilter(filter)(event);
}

// ---------------------------------------------------------------------------------------------
// Filter validation

const tooDeep = (path: string): FilterProblem => ({ path, message: `nesting exceeds the maximum depth of ${FILTER_MAX_DEPTH}` });

/**
 * Problems with a filter, empty when it is well formed. Null and undefined (no filter) are fine.
 * `level` below is the nesting level a value occupies when it is an object or an array.
 */
export function validateFilter(filter: unknown): FilterProblem[] {
  const problems: FilterProblem[] = [];
  if (filter === null || filter === undefined) return problems;
  if (!isObject(filter)) problems.push({ path: 'filter', message: 'must be a JSON object' });
  else checkCondition(filter, 'filter', 1, problems);
  return problems;
}

function checkCondition(cond: Record<string, unknown>, path: string, level: number, problems: FilterProblem[]): void {
  if (level > FILTER_MAX_DEPTH) {
    problems.push(tooDeep(path));
    return;
  }
  for (const key of Object.keys(cond)) {
    const arg = cond[key];
    const at = `${path}.${key}`;
    if (key.startsWith('$')) checkOperator(key, arg, at, level + 1, problems);
    else if (isObject(arg)) checkCondition(arg, at, level + 1, problems);
    else checkLiteral(arg, at, level + 1, problems);
  }
}

function checkOperator(op: string, arg: unknown, path: string, level: number, problems: FilterProblem[]): void {
  const problem = (message: string) => problems.push({ path, message });
  switch (op) {
    case '$eq':
    case '$neq':
      checkLiteral(arg, path, level, problems);
      return;
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      if (typeof arg !== 'string' && !(typeof arg === 'number' && Number.isFinite(arg))) problem('must be a number or a string');
      return;
    case '$in':
    case '$nin':
      if (Array.isArray(arg)) checkLiteral(arg, path, level, problems);
      else problem('must be an array');
      return;
    case '$startsWith':
    case '$endsWith':
      if (typeof arg !== 'string') problem('must be a string');
      return;
    case '$exist':
      if (typeof arg !== 'boolean') problem('must be true or false');
      return;
    case '$or':
    case '$and':
      if (!Array.isArray(arg)) problem('must be an array of filter objects');
      else if (arg.length === 0) problem('must not be empty');
      else if (level > FILTER_MAX_DEPTH) problems.push(tooDeep(path));
      else {
        arg.forEach((sub: unknown, i) => {
          if (isObject(sub)) checkCondition(sub, `${path}[${i}]`, level + 1, problems);
          else problems.push({ path: `${path}[${i}]`, message: 'must be a filter object' });
        });
      }
      return;
    case '$not':
      if (isObject(arg)) checkCondition(arg, path, level, problems);
      else problem('must be a filter object');
      return;
    default:
      problem(`unknown operator ${op}`);
  }
}

/** A literal value (compared, not interpreted): any JSON value within the depth bound. */
function checkLiteral(value: unknown, path: string, level: number, problems: FilterProblem[]): void {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) problems.push({ path, message: 'must be a finite number' });
    return;
  }
  if (typeof value !== 'object') {
    problems.push({ path, message: 'must be a JSON value' });
    return;
  }
  if (level > FILTER_MAX_DEPTH) {
    problems.push(tooDeep(path));
    return;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) checkLiteral(value[i], `${path}[${i}]`, level + 1, problems);
  } else for (const [k, item] of Object.entries(value)) checkLiteral(item, `${path}.${k}`, level + 1, problems);
}

/**
 * Whether a topic may be used under the TOPICS setting: `*` allows any, an entry may itself be a
 * wildcard (`user.*`). A destination may also subscribe with a wildcard of its own, as long as it
 * covers at least one configured topic.
 */
export function isConfiguredTopic(configured: readonly string[], topic: string): boolean {
  if (matchesTopic(configured, topic)) return true;
  return topic.includes('*') && configured.some((c) => !c.includes('*') && matchesTopic([topic], c));
}
