// A minimal typed event emitter: `on` returns the function that removes the listener, so owners
// can collect disposers instead of keeping references to listeners (VS Code's Event<T> idea,
// without its machinery). A throwing listener does not stop the others.

export type Listener<A extends unknown[]> = (...args: A) => void;

export class TypedEmitter<Events extends { [K in keyof Events]: unknown[] }> {
  private readonly listeners = new Map<keyof Events, Set<Listener<never[]>>>();

  on<K extends keyof Events>(event: K, listener: Listener<Events[K]>): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(listener as unknown as Listener<never[]>);
    return () => set.delete(listener as unknown as Listener<never[]>);
  }

  emit<K extends keyof Events>(event: K, ...args: Events[K]): void {
    const set = this.listeners.get(event);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        (listener as unknown as Listener<Events[K]>)(...args);
      } catch (e) {
        console.error(`listener of "${String(event)}" threw:`, e);
      }
    }
  }

  removeAll(): void {
    this.listeners.clear();
  }
}
