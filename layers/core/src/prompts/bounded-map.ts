/** A Map that forgets its oldest entry beyond `max`: warm caches that cannot grow without bound. */
export class BoundedMap<K, V> {
  readonly #entries = new Map<K, V>();
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  get(key: K): V | undefined {
    return this.#entries.get(key);
  }

  set(key: K, value: V): void {
    if (this.#entries.size >= this.#max && !this.#entries.has(key)) this.#entries.delete(this.#entries.keys().next().value as K);
    this.#entries.set(key, value);
  }

  clear(): void {
    this.#entries.clear();
  }

  get size(): number {
    return this.#entries.size;
  }
}
