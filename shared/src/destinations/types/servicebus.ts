import { icon, type DestinationTypeDef } from './def.ts';

/**
 * Why the Azure SDK could not use a connection string, read as it reads one: `;`-separated
 * `Name=value` parts, names case-sensitive (spaces around them ignored), an `Endpoint=sb://` with a
 * namespace host, and either a key (`SharedAccessKeyName` and `SharedAccessKey`) or a signature
 * (`SharedAccessSignature=SharedAccessSignature sr=...`), not both.
 */
export function connectionStringProblem(cs: unknown): string | null {
  if (typeof cs !== 'string') return null;
  const parts = new Map(
    cs
      .split(';')
      .filter((p) => p.includes('='))
      .map((p) => [p.slice(0, p.indexOf('=')).trim(), p.slice(p.indexOf('=') + 1).trim()] as const),
  );
  const host = /^sb:\/\/([^/:]+)/.exec(parts.get('Endpoint') ?? '')?.[1];
  if (!host) return 'must hold Endpoint=sb://<namespace>.servicebus.windows.net/ (names are case-sensitive)';
  const key = Boolean(parts.get('SharedAccessKeyName') && parts.get('SharedAccessKey'));
  const sas = parts.get('SharedAccessSignature');
  if (key && sas !== undefined) return 'must hold a SharedAccessKey or a SharedAccessSignature, not both';
  if (sas !== undefined && !sas.startsWith('SharedAccessSignature '))
    return 'must hold a SharedAccessSignature of the form SharedAccessSignature sr=...&sig=...&se=...&skn=...';
  if (!key && sas === undefined)
    return 'must hold SharedAccessKeyName and SharedAccessKey (or a SharedAccessSignature); names are case-sensitive';
  return null;
}

export const servicebus: DestinationTypeDef = {
  type: 'servicebus',
  label: 'Azure Service Bus',
  description: 'Send events to an Azure Service Bus queue or topic.',
  icon: icon('<path d="M3 7h18M3 12h18M3 17h18"/>'),
  instructions: [
    '# Azure Service Bus',
    '',
    "Each event is sent as one message to the queue or topic named in **Queue or topic**: the body is the event data as JSON (content type `application/json`), the message id is the event id, and the metadata (`event-id`, `topic`, `timestamp`, the destination's delivery metadata, the event's metadata) becomes application properties.",
    '',
    '## Setup',
    '1. In your Service Bus namespace, create the queue, or the topic and at least one subscription (a topic without subscriptions drops what it receives).',
    '2. Under the queue or topic (or the namespace), add a **Shared access policy** with the **Send** claim only.',
    '3. Copy its **Primary connection string** (`Endpoint=sb://<namespace>.servicebus.windows.net/;SharedAccessKeyName=...;SharedAccessKey=...`) into **Connection string**. An `EntityPath` in it is ignored: the name field decides.',
    '',
    'Permissions: `Send` on the entity. A refused key is a failed attempt with reason `unauthorized`; a missing queue or topic, `not_found`; a busy namespace (ServerBusy), `throttled`.',
  ].join('\n'),
  remote_setup_url: 'https://learn.microsoft.com/azure/service-bus-messaging/service-bus-quickstart-portal',
  config_fields: [
    { key: 'name', type: 'text', label: 'Queue or topic', description: 'Name of the queue or topic.', required: true, maxlength: 260 },
  ],
  credential_fields: [
    {
      key: 'connection_string',
      type: 'text',
      label: 'Connection string',
      description: 'Endpoint=sb://...;SharedAccessKeyName=...;SharedAccessKey=...',
      required: true,
      sensitive: true,
      pattern: 'Endpoint=sb://.+',
    },
  ],
  validate: (_config, credentials) => {
    const problem = connectionStringProblem(credentials.connection_string);
    return problem ? [{ path: 'body.credentials.connection_string', message: problem }] : [];
  },
  target: (c) => String(c.name ?? ''),
};
