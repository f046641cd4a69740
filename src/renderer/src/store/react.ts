// React bindings of the store: a context (so previews and tests can mount with their own store),
// selector hooks, and a transient subscription for numbers that change every frame.

import {
  createContext,
  createElement,
  useContext,
  useLayoutEffect,
  useRef,
  type ReactNode,
  type RefObject,
} from 'react';
import { useStore } from 'zustand';
import { useShallow } from 'zustand/react/shallow';
import type { SluiceStore } from './index';
import type { SluiceState } from './types';

const StoreContext = createContext<SluiceStore | null>(null);

export function StoreProvider({ store, children }: { store: SluiceStore; children: ReactNode }) {
  return createElement(StoreContext.Provider, { value: store }, children);
}

export function useSluiceStore(): SluiceStore {
  const store = useContext(StoreContext);
  if (!store) throw new Error('useSluiceStore outside <StoreProvider>');
  return store;
}

/** One field (or a derived primitive); re-renders when it changes. */
export function useSluice<T>(selector: (s: SluiceState) => T): T {
  return useStore(useSluiceStore(), selector);
}

/** Several fields at once, compared shallowly. */
export function useSluiceShallow<T extends object>(selector: (s: SluiceState) => T): T {
  return useStore(useSluiceStore(), useShallow(selector));
}

/**
 * Writes a fast-changing value straight into a DOM node (zustand's transient updates): bytes/sec,
 * ETA, a progress bar's width change every frame during a transfer, and re-rendering the row for
 * them would be wasted work. `write` is called with the node on every store change (and every
 * `tickMs` when given, for clocks) and should only touch the DOM when its value changed.
 */
export function useTransient<E extends Element>(
  write: (el: E, s: SluiceState) => void,
  deps: unknown[],
  tickMs?: number,
): RefObject<E | null> {
  const store = useSluiceStore();
  const ref = useRef<E>(null);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const apply = (s: SluiceState) => write(el, s);
    apply(store.getState());
    const off = store.subscribe(apply);
    const timer = tickMs ? setInterval(() => apply(store.getState()), tickMs) : undefined;
    return () => {
      off();
      if (timer) clearInterval(timer);
    };
  }, [store, tickMs, ...deps]);
  return ref;
}

export function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}
