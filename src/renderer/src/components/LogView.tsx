// Virtualized view of a job's debug log: only the rows in the viewport (plus a few) are in the DOM,
// so 250k lines scroll like 50, and only their pages are fetched from the host, which keeps the
// log (LogPages). Rows have a fixed height; the spacer gives the scrollbar its range.

import {
  memo,
  useDeferredValue,
  useEffect,
  useLayoutEffect,
  useMemo,
  useReducer,
  useRef,
  useState,
  type ReactNode,
} from 'react';
import { LogPages } from '../store/job-log';
import { useSluice } from '../store/react';

export const LOG_ROW_HEIGHT = 20;
const OVERSCAN = 12;

export const LogView = memo(function LogView({
  jobId,
  query,
  follow,
  onFollowChange,
  onCounts,
}: {
  jobId: string;
  query: string;
  follow: boolean;
  onFollowChange: (follow: boolean) => void;
  onCounts?: (c: { shown: number; total: number; dropped: number }) => void;
}) {
  const fetchLogPage = useSluice((s) => s.fetchLogPage);
  const lineCount = useSluice((s) => s.jobs[jobId]?.logLines ?? 0);
  const dropped = useSluice((s) => s.jobs[jobId]?.logDropped ?? 0);
  const deferredQuery = useDeferredValue(query);
  const needle = deferredQuery.trim().toLowerCase();
  const [, refresh] = useReducer((n: number) => n + 1, 0);
  const pages = useMemo(
    () =>
      new LogPages(
        (from, count) => fetchLogPage(jobId, from, count, needle || undefined),
        refresh,
        needle !== '',
      ),
    [fetchLogPage, jobId, needle],
  );
  useEffect(() => () => pages.dispose(), [pages]);
  // the host's log grew (pushed counts): the page that was filling up is fetched again when shown
  useMemo(() => pages.grow(lineCount, dropped), [pages, lineCount, dropped]);
  const total = pages.length;

  const viewportRef = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(480);
  const frame = useRef(0);

  useEffect(() => {
    onCounts?.({ shown: total, total: pages.total, dropped: pages.dropped });
  }, [onCounts, total, pages.total, pages.dropped]);

  const followRef = useRef(follow);
  followRef.current = follow;
  useLayoutEffect(() => {
    const el = viewportRef.current!;
    const measure = () => {
      setHeight(el.clientHeight);
      // the view gets its size only once its dialog is shown: stick to the end from then on
      if (followRef.current) {
        el.scrollTop = el.scrollHeight;
        setScrollTop(el.scrollTop);
      }
    };
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  useLayoutEffect(() => {
    if (!follow) return;
    const el = viewportRef.current!;
    el.scrollTop = el.scrollHeight;
    setScrollTop(el.scrollTop);
  }, [follow, total]);

  const onScroll = () => {
    if (frame.current) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = 0;
      const el = viewportRef.current;
      if (!el) return;
      setScrollTop(el.scrollTop);
      const atBottom = el.scrollTop + el.clientHeight >= el.scrollHeight - LOG_ROW_HEIGHT;
      if (atBottom !== follow) onFollowChange(atBottom);
    });
  };
  useEffect(() => () => cancelAnimationFrame(frame.current), []);

  const first = Math.max(0, Math.floor(scrollTop / LOG_ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(total, Math.ceil((scrollTop + height) / LOG_ROW_HEIGHT) + OVERSCAN);
  // the first page also brings the counts (a job from an earlier session, a filter's matches)
  useEffect(() => pages.ensure(pages.loaded ? first : 0, pages.loaded ? last : 1));
  const rows = [];
  for (let i = first; i < last; i++) {
    const text = pages.line(i);
    rows.push(
      <LogRow
        key={i}
        number={pages.lineNumber(i)}
        text={text ?? ''}
        pending={text === undefined}
        needle={needle}
      />,
    );
  }

  return (
    <div
      ref={viewportRef}
      className="logview"
      tabIndex={0}
      role="region"
      aria-label={`Debug log, ${total.toLocaleString('en-US')} lines${needle ? ' matching the filter' : ''}`}
      onScroll={onScroll}
      data-testid="logview"
      data-total={total}
    >
      {total === 0 ? (
        <p className="logview-empty">
          {!pages.loaded ? 'Loading the log…' : needle ? 'No line matches the filter.' : 'No log lines yet.'}
        </p>
      ) : (
        <div className="logview-spacer" style={{ height: total * LOG_ROW_HEIGHT }}>
          <div className="logview-rows" style={{ transform: `translateY(${first * LOG_ROW_HEIGHT}px)` }}>
            {rows}
          </div>
        </div>
      )}
    </div>
  );
});

const LogRow = memo(function LogRow({
  number,
  text,
  pending,
  needle,
}: {
  /** the line's number in the whole log (a filtered view's from the host); unknown until its page is here */
  number: number | undefined;
  text: string;
  pending: boolean;
  needle: string;
}) {
  let body: ReactNode = text;
  if (needle) {
    const at = text.toLowerCase().indexOf(needle);
    if (at >= 0) {
      body = (
        <>
          {text.slice(0, at)}
          <mark>{text.slice(at, at + needle.length)}</mark>
          {text.slice(at + needle.length)}
        </>
      );
    }
  }
  const tone = text.startsWith('abort:')
    ? ' log-error'
    : text.startsWith('warning:')
      ? ' log-warn'
      : text.startsWith('phase:')
        ? ' log-phase'
        : '';
  return (
    <div className={`log-line${tone}${pending ? ' log-pending' : ''}`} style={{ height: LOG_ROW_HEIGHT }}>
      <span className="log-number" aria-hidden="true">
        {number ?? ''}
      </span>
      <span className="log-text">{body}</span>
    </div>
  );
});
