import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { api, type TypeSchema } from '../api.ts';
import { ErrorMessage, FieldInput, Loading, Markdown, TopicPicker, TypeIcon, useNotify, useTypes } from '../components.tsx';
import { createObject, editableCredentials, fieldProblems, problemsOf, toValues, type Values, without } from '../forms.ts';

const STEPS = ['Type', 'Topics', 'Configuration'] as const;

/** The create wizard: type, then topics, then the type's fields (from its schema) beside its instructions. */
export function NewDestinationPage() {
  const types = useTypes();
  const navigate = useNavigate();
  const notify = useNotify();
  const client = useQueryClient();
  const [step, setStep] = useState(0);
  const [schema, setSchema] = useState<TypeSchema | null>(null);
  const [topics, setTopics] = useState<string[]>(['*']);
  const [config, setConfig] = useState<Values>({});
  const [credentials, setCredentials] = useState<Values>({});
  const [problems, setProblems] = useState<Record<string, string>>({});
  const create = useMutation({
    mutationFn: api.createDestination,
    onSuccess: (d) => {
      void client.invalidateQueries({ queryKey: ['destinations'] });
      notify('Destination created.');
      navigate(`/destinations/${encodeURIComponent(d.id)}`);
    },
    // What the API refused, at the fields too (the form checks only what the type schema says).
    onError: (err) => setProblems((p) => ({ ...p, ...fieldProblems(err, { config: '', credentials: 'credentials.' }) })),
  });

  const choose = (s: TypeSchema) => {
    setSchema(s);
    setConfig(toValues(s.config_fields, undefined));
    setCredentials(toValues(editableCredentials(s), undefined));
    setProblems({});
  };

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!schema) return;
    if (step < 2) {
      if (step === 1 && topics.length === 0) {
        setProblems({ topics: 'Choose at least one topic.' });
        return;
      }
      setProblems({});
      setStep(step + 1);
      return;
    }
    const credFields = editableCredentials(schema);
    const found = {
      ...problemsOf(schema.config_fields, config),
      ...Object.fromEntries(Object.entries(problemsOf(credFields, credentials)).map(([k, v]) => [`credentials.${k}`, v])),
    };
    setProblems(found);
    if (Object.keys(found).length) return;
    const creds = createObject(credFields, credentials);
    create.mutate({
      type: schema.type,
      topics: topics.includes('*') ? '*' : topics,
      config: createObject(schema.config_fields, config),
      ...(Object.keys(creds).length || schema.type !== 'webhook' ? { credentials: creds } : {}),
    });
  };

  return (
    <section aria-labelledby="new-title" className="wizard">
      <p className="crumbs">
        <Link to="/">Destinations</Link> / New
      </p>
      <h1 id="new-title">New destination</h1>
      <ol className="steps" aria-label="Steps">
        {STEPS.map((s, i) => (
          <li key={s} className={i === step ? 'current' : i < step ? 'done' : ''} aria-current={i === step ? 'step' : undefined}>
            <span className="step-n">{i + 1}</span> {s}
          </li>
        ))}
      </ol>
      <form onSubmit={submit} noValidate>
        {step === 0 ? (
          <fieldset className="type-grid">
            <legend>Where should events go?</legend>
            {types.isPending ? <Loading what="destination types" /> : null}
            <ErrorMessage error={types.error} />
            {types.data?.map((t) => (
              <label key={t.type} className={`type-card${schema?.type === t.type ? ' selected' : ''}`}>
                <input type="radio" name="type" value={t.type} checked={schema?.type === t.type} onChange={() => choose(t)} />
                <TypeIcon schema={t} size={28} />
                <span>
                  <strong>{t.label}</strong>
                  <span className="small muted">{t.description}</span>
                </span>
              </label>
            ))}
          </fieldset>
        ) : null}

        {step === 1 ? (
          <>
            <TopicPicker value={topics} onChange={setTopics} />
            {problems.topics ? (
              <p className="field-error" role="alert">
                {problems.topics}
              </p>
            ) : null}
          </>
        ) : null}

        {step === 2 && schema ? (
          <div className="config-step">
            <div>
              <h2 className="section-title">
                <TypeIcon schema={schema} /> {schema.label} configuration
              </h2>
              {schema.config_fields.map((f) => (
                <FieldInput
                  key={f.key}
                  field={f}
                  value={config[f.key]}
                  error={problems[f.key]}
                  onChange={(v) => {
                    setConfig((c) => ({ ...c, [f.key]: v }));
                    setProblems((p) => without(p, f.key));
                  }}
                />
              ))}
              {editableCredentials(schema).length ? <h3>Credentials</h3> : null}
              {editableCredentials(schema).map((f) => (
                <FieldInput
                  key={f.key}
                  field={f}
                  value={credentials[f.key]}
                  error={problems[`credentials.${f.key}`]}
                  onChange={(v) => {
                    setCredentials((c) => ({ ...c, [f.key]: v }));
                    setProblems((p) => without(p, `credentials.${f.key}`));
                  }}
                />
              ))}
              {schema.type === 'webhook' ? (
                <p className="help">A signing secret is generated for you; it is shown once the destination exists.</p>
              ) : null}
              {schema.remote_setup_url ? (
                <p>
                  <a href={schema.remote_setup_url} target="_blank" rel="noopener noreferrer">
                    Set up remotely
                  </a>
                </p>
              ) : null}
              <ErrorMessage error={create.error} />
            </div>
            <aside className="instructions" aria-label="Instructions">
              <Markdown source={schema.instructions} />
            </aside>
          </div>
        ) : null}

        <div className="actions">
          {step > 0 ? (
            <button type="button" className="secondary" onClick={() => setStep(step - 1)}>
              Back
            </button>
          ) : (
            <Link className="button secondary" to="/">
              Cancel
            </Link>
          )}
          <button type="submit" className="primary" disabled={!schema || create.isPending}>
            {step < 2 ? 'Next' : create.isPending ? 'Creating…' : 'Create destination'}
          </button>
        </div>
      </form>
    </section>
  );
}
