// A small inline icon set (16×16 strokes) so the app ships no icon font and needs no network.

const PATHS = {
  clone: 'M8 2v8m0 0 3-3m-3 3L5 7M3 11v2h10v-2',
  bundle: 'M2.5 5 8 2l5.5 3v6L8 14l-5.5-3zM2.5 5 8 8l5.5-3M8 8v6',
  apply: 'M3 8h7m0 0-3-3m3 3-3 3M13 3v10',
  verify: 'M3 8.5 6.5 12 13 4.5',
  compare: 'M3 13V8m5 5V3m5 10V6',
  history: 'M8 4.5V8l2.5 1.5M2.5 8a5.5 5.5 0 1 0 1.6-3.9M2.5 2.5v2.5H5',
  transfers: 'M4 3v10m0 0-2-2m2 2 2-2M12 13V3m0 0-2 2m2-2 2 2',
  sun: 'M8 5.5a2.5 2.5 0 1 1 0 5 2.5 2.5 0 0 1 0-5zM8 1.5v1.5m0 10v1.5M1.5 8H3m10 0h1.5M3.4 3.4l1 1m7.2 7.2 1 1m0-9.2-1 1m-7.2 7.2-1 1',
  moon: 'M13 9.5A5.5 5.5 0 0 1 6.5 3a5.5 5.5 0 1 0 6.5 6.5z',
  system: 'M2 3h12v8H2zM6 14h4M8 11v3',
  cancel: 'M4 4l8 8M12 4l-8 8',
  retry: 'M13 8a5 5 0 1 1-1.5-3.5M13 2.5v3h-3',
  folder: 'M2 4.5v8h12V6H8L6.5 4.5z',
  log: 'M3 3h10M3 6.5h10M3 10h6M3 13.5h8',
  close: 'M4 4l8 8M12 4l-8 8',
  warning: 'M8 2 14.5 13.5h-13zM8 6.5v3.5M8 11.8v.2',
  error: 'M8 1.8a6.2 6.2 0 1 1 0 12.4A6.2 6.2 0 0 1 8 1.8zM8 4.8v4M8 11v.2',
  check: 'M3 8.5 6.5 12 13 4.5',
  drop: 'M8 2v8m0 0 3-3m-3 3L5 7M2.5 12.5h11',
  download: 'M8 2v8m0 0 3-3m-3 3L5 7M3 13h10',
  plug: 'M6 2v3m4-3v3M4.5 5h7v2.5a3.5 3.5 0 0 1-7 0zM8 11v3',
  trash: 'M3 4.5h10M6.5 4.5V3h3v1.5M4.5 4.5l.6 9h5.8l.6-9',
  play: 'M5 3.5v9l7-4.5z',
  sample: 'M3 4.5 8 2l5 2.5v7L8 14l-5-2.5zM8 7v7M3 4.5 8 7l5-2.5',
  external: 'M9 3h4v4M13 3 7.5 8.5M11 9.5V13H3V5h3.5',
  settings: 'M2 4h12M2 8h12M2 12h12M10 2.5v3M5 6.5v3M11 10.5v3',
} as const;

export type IconName = keyof typeof PATHS;

export function Icon({ name, size = 16, className }: { name: IconName; size?: number; className?: string }) {
  return (
    <svg
      className={className ? `icon ${className}` : 'icon'}
      width={size}
      height={size}
      viewBox="0 0 16 16"
      fill="none"
      stroke="currentColor"
      strokeWidth={1.5}
      strokeLinecap="round"
      strokeLinejoin="round"
      aria-hidden="true"
      focusable="false"
    >
      <path d={PATHS[name]} />
    </svg>
  );
}
