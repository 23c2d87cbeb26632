/**
 * Cursor paging over the listings that answer `{models, pagination: {next, prev}}` (tenants, events,
 * attempts): follow `pagination.next` until it is null. A page may hold fewer items than `limit`
 * (pages carrying event payloads also end at a byte bound), so only `next` says whether more follow.
 */
export interface Page<T> {
  models: T[];
  pagination: { next: string | null };
}

/** Every page, first to last; `fetchPage(cursor)` asks for the page after `cursor` (undefined: the first). */
export async function* pages<T>(fetchPage: (next: string | undefined) => Promise<Page<T>>): AsyncGenerator<Page<T>> {
  let next: string | undefined;
  do {
    const page = await fetchPage(next);
    yield page;
    next = page.pagination.next ?? undefined;
  } while (next);
}

/** Every item of every page, in order. */
export async function* items<T>(fetchPage: (next: string | undefined) => Promise<Page<T>>): AsyncGenerator<T> {
  for await (const page of pages(fetchPage)) yield* page.models;
}
