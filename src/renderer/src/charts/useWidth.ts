import { useLayoutEffect, useRef, useState } from 'react';

/** The element's content width, kept current with a ResizeObserver (charts draw at real pixels). */
export function useWidth<E extends HTMLElement>(initial = 480) {
  const ref = useRef<E>(null);
  const [width, setWidth] = useState(initial);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => setWidth(Math.max(160, Math.floor(el.clientWidth)));
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  return [ref, width] as const;
}
