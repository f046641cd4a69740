// Form pieces shared by the dialogs and screens: a labelled text field with its error, the folder field
// with a picker (and a plain text fallback when the host has no picker), a checkbox, a search box, the
// transfer options.

import { useId, type ReactNode } from 'react';
import type { BackgroundCloseMode, StreamVersionChoice } from '../../../shared/jobs';
import { useSluice } from '../store/react';
import { Icon, type IconName } from './Icon';

interface TextFieldProps {
  onBlur?: () => void;
  id: string;
  label: string;
  value: string;
  onChange: (v: string) => void;
  error?: string | null;
  hint?: ReactNode;
  placeholder?: string;
  type?: 'text' | 'url' | 'password';
  inputMode?: 'url' | 'text';
  autoComplete?: string;
  after?: ReactNode;
  spellCheck?: boolean;
  required?: boolean;
  /** id of a <datalist> of suggestions */
  list?: string;
}

export function TextField({
  id,
  label,
  value,
  onChange,
  error,
  hint,
  placeholder,
  type = 'text',
  inputMode,
  autoComplete = 'off',
  after,
  spellCheck = false,
  required,
  onBlur,
  list,
}: TextFieldProps) {
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const describedBy = [hint ? hintId : null, error ? errorId : null].filter(Boolean).join(' ') || undefined;
  return (
    <div className={`field${error ? ' has-error' : ''}`}>
      <label htmlFor={id}>{label}</label>
      <div className="field-row">
        <input
          id={id}
          type={type}
          value={value}
          inputMode={inputMode}
          placeholder={placeholder}
          autoComplete={autoComplete}
          spellCheck={spellCheck}
          aria-invalid={error ? true : undefined}
          aria-describedby={describedBy}
          aria-required={required || undefined}
          list={list}
          onChange={(e) => onChange(e.target.value)}
          onBlur={onBlur}
        />
        {after}
      </div>
      {hint ? (
        <p id={hintId} className="field-hint">
          {hint}
        </p>
      ) : null}
      {error ? (
        <p id={errorId} className="field-error">
          {error}
        </p>
      ) : null}
    </div>
  );
}

/** The button beside a path field that opens the native picker (Electron only). */
export function ChooseButton({ icon, onClick }: { icon: IconName; onClick: () => void }) {
  return (
    <button type="button" className="button" onClick={onClick}>
      <Icon name={icon} /> Choose…
    </button>
  );
}

// a TextField whose `after` is the picker button
export function FolderField(
  props: Pick<TextFieldProps, 'id' | 'label' | 'value' | 'onChange' | 'error' | 'hint' | 'placeholder'>,
) {
  const { value, onChange } = props;
  const pickDirectory = useSluice((s) => s.pickDirectory);
  // only Electron has a native folder picker; the web host answers null, so offer the text field alone
  const canPick = useSluice((s) => s.appInfo?.host === 'electron');
  return (
    <TextField
      {...props}
      after={
        canPick ? (
          <ChooseButton
            icon="folder"
            onClick={() =>
              void pickDirectory(value.replace(/[\\/][^\\/]*$/, '') || undefined).then((picked) => {
                if (picked) onChange(picked);
              })
            }
          />
        ) : undefined
      }
    />
  );
}

export function CheckboxField({
  id,
  label,
  checked,
  onChange,
  compact,
}: {
  id: string;
  label: ReactNode;
  checked: boolean;
  onChange: (checked: boolean) => void;
  compact?: boolean;
}) {
  return (
    <div className={`field checkbox${compact ? ' compact' : ''}`}>
      <input id={id} type="checkbox" checked={checked} onChange={(e) => onChange(e.target.checked)} />
      <label htmlFor={id}>{label}</label>
    </div>
  );
}

/** A filter box whose label is for screen readers only (the placeholder shows what it does). */
export function SearchField({
  id,
  label,
  placeholder,
  value,
  onChange,
  spellCheck,
  autoComplete,
}: {
  id: string;
  label: string;
  placeholder: string;
  value: string;
  onChange: (v: string) => void;
  spellCheck?: boolean;
  autoComplete?: string;
}) {
  return (
    <div className="search-field">
      <label htmlFor={id} className="visually-hidden">
        {label}
      </label>
      <input
        id={id}
        type="search"
        placeholder={placeholder}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        spellCheck={spellCheck}
        autoComplete={autoComplete}
      />
    </div>
  );
}

export interface TransferOptionValues {
  backgroundClose: BackgroundCloseMode;
  closeThreads: number;
  verify: boolean;
}

export function TransferOptions<T extends TransferOptionValues>({
  value,
  onChange,
  verifyLabel,
}: {
  value: T;
  onChange: (v: T) => void;
  verifyLabel: string;
}) {
  const id = useId();
  return (
    <>
      <div className="field inline">
        <label htmlFor={`${id}-closer`}>Background closing</label>
        <select
          id={`${id}-closer`}
          value={value.backgroundClose}
          onChange={(e) => onChange({ ...value, backgroundClose: e.target.value as BackgroundCloseMode })}
          aria-describedby={`${id}-closer-hint`}
        >
          <option value="auto">Auto (what is fastest on this platform)</option>
          <option value="on">On</option>
          <option value="off">Off</option>
        </select>
        <p id={`${id}-closer-hint`} className="field-hint">
          Closes written files on worker threads, like hg&rsquo;s <code>worker.backgroundclose</code>; it pays
          off where closing is slow (Windows, network drives).
        </p>
      </div>
      <div className="field inline">
        <label htmlFor={`${id}-threads`}>Closing threads</label>
        <input
          id={`${id}-threads`}
          type="number"
          min={1}
          max={64}
          value={value.closeThreads}
          disabled={value.backgroundClose === 'off'}
          onChange={(e) =>
            onChange({ ...value, closeThreads: Math.max(1, Math.min(64, Number(e.target.value) || 1)) })
          }
        />
      </div>
      <CheckboxField
        id={`${id}-verify`}
        label={verifyLabel}
        checked={value.verify}
        onChange={(verify) => onChange({ ...value, verify })}
      />
    </>
  );
}

export function StreamChoice({
  value,
  onChange,
  offered,
}: {
  value: StreamVersionChoice;
  onChange: (v: StreamVersionChoice) => void;
  offered?: { v1: boolean; v2: boolean };
}) {
  const name = useId();
  const opts: { v: StreamVersionChoice; label: string; hint: string }[] = [
    { v: 'auto', label: 'Auto', hint: 'v2 when offered, else v1' },
    { v: 'v2', label: 'Stream v2', hint: 'bundle2 stream2 part' },
    { v: 'v1', label: 'Stream v1', hint: 'legacy stream_out' },
  ];
  return (
    <fieldset className="field segmented-field">
      <legend>Stream format</legend>
      <div className="segmented" role="radiogroup" aria-label="Stream format">
        {opts.map((o) => {
          const unavailable = offered && o.v !== 'auto' && !offered[o.v];
          return (
            <label
              key={o.v}
              className={`segment${value === o.v ? ' selected' : ''}${unavailable ? ' unavailable' : ''}`}
              title={o.hint}
            >
              <input
                type="radio"
                name={name}
                value={o.v}
                checked={value === o.v}
                onChange={() => onChange(o.v)}
              />
              <span>{o.label}</span>
              {unavailable ? <span className="visually-hidden"> (not offered by the server)</span> : null}
            </label>
          );
        })}
      </div>
    </fieldset>
  );
}
