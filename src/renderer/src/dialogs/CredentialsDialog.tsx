// The host asks for credentials when a server answers 401. They go to that one transfer; with
// "Remember" the host keeps them for that server (Electron: encrypted with the OS keychain's key,
// in the main process only). The renderer never stores them; the web host stores nothing and says so.

import { useEffect, useState, type FormEvent } from 'react';
import { Dialog, FormFooter } from '../components/Dialog';
import { CheckboxField, TextField } from '../components/fields';
import { useSluice, useSluiceShallow } from '../store/react';
import type { CredentialsPrompt } from '../store/types';

export function CredentialsDialog({ prompt }: { prompt: CredentialsPrompt }) {
  const { answer, saved, loadSaved } = useSluiceShallow((s) => ({
    answer: s.answerCredentials,
    saved: s.savedCredentials,
    loadSaved: s.loadSavedCredentials,
  }));
  const host = useSluice((s) => s.appInfo?.host);
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');
  const [remember, setRemember] = useState(false);
  useEffect(() => {
    if (!saved) void loadSaved();
  }, [saved, loadSaved]);
  const canRemember = saved?.available === true;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void answer(prompt.requestId, { user, password }, canRemember && remember);
  };
  return (
    <Dialog
      title="Sign in to the server"
      size="small"
      onClose={() => void answer(prompt.requestId, null)}
      description={
        <>
          <strong>{prompt.url}</strong> asks for a user name and password
          {prompt.realm ? (
            <>
              {' '}
              (realm <q>{prompt.realm}</q>)
            </>
          ) : null}
          .
        </>
      }
      testId="credentials-dialog"
      footer={
        <FormFooter
          formId={`cred-${prompt.requestId}`}
          onCancel={() => void answer(prompt.requestId, null)}
          label="Sign in"
        />
      }
    >
      <form id={`cred-${prompt.requestId}`} onSubmit={submit}>
        <TextField id="cred-user" label="User name" value={user} onChange={setUser} autoComplete="username" />
        <TextField
          id="cred-password"
          label="Password"
          type="password"
          value={password}
          onChange={setPassword}
          autoComplete="current-password"
        />
        {canRemember ? (
          <CheckboxField
            id="cred-remember"
            label="Remember for this server (encrypted with your system keychain; Settings can forget it)"
            checked={remember}
            onChange={setRemember}
          />
        ) : (
          <p className="field-hint" data-testid="cred-not-stored">
            {host === 'web'
              ? 'The web host never stores credentials: you will be asked again next time.'
              : `Sluice will not remember them: ${saved?.reason ?? 'this host cannot store credentials'}.`}
          </p>
        )}
      </form>
    </Dialog>
  );
}
