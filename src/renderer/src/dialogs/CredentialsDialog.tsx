// The host asks for credentials when a server answers 401. They go to that one transfer and are
// never stored by the renderer.

import { useState, type FormEvent } from 'react';
import { Dialog, FormFooter } from '../components/Dialog';
import { TextField } from '../components/fields';
import { useSluice } from '../store/react';
import type { CredentialsPrompt } from '../store/types';

export function CredentialsDialog({ prompt }: { prompt: CredentialsPrompt }) {
  const answer = useSluice((s) => s.answerCredentials);
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void answer(prompt.requestId, { user, password });
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
      </form>
    </Dialog>
  );
}
