import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, type Destination } from '../api.ts';
import { ErrorMessage, Loading, StatusBadge, Time, Topics, TypeIcon, useTypes } from '../components.tsx';

function LastDelivery({ destination }: { destination: Destination }) {
  const q = useQuery({
    queryKey: ['destination', destination.id, 'attempts', 'last'],
    queryFn: () => api.attempts(destination.id, { limit: 1 }),
  });
  const last = q.data?.models[0];
  if (q.isPending) return <span className="muted">…</span>;
  if (!last) return <span className="muted">No deliveries yet</span>;
  return (
    <span className="last">
      <StatusBadge status={last.status} /> <Time iso={last.time} />
    </span>
  );
}

export function DestinationsPage() {
  const types = useTypes();
  const list = useQuery({ queryKey: ['destinations'], queryFn: api.destinations });
  return (
    <section aria-labelledby="dest-title">
      <div className="page-head">
        <h1 id="dest-title">Event destinations</h1>
        <Link className="button primary" to="/new">
          New destination
        </Link>
      </div>
      <p className="lead">Where events are delivered. Each destination receives the topics it subscribes to.</p>
      <ErrorMessage error={list.error} />
      {list.isPending ? <Loading what="destinations" /> : null}
      {list.data && list.data.length === 0 ? (
        <div className="empty card">
          <h2>No destinations yet</h2>
          <p>Create one to start receiving events.</p>
          <Link className="button primary" to="/new">
            Create a destination
          </Link>
        </div>
      ) : null}
      {list.data?.length ? (
        <table className="table destinations">
          <thead>
            <tr>
              <th scope="col">Type</th>
              <th scope="col">Target</th>
              <th scope="col">Topics</th>
              <th scope="col">Status</th>
              <th scope="col">Last delivery</th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((d) => {
              const schema = types.data?.find((t) => t.type === d.type);
              return (
                <tr key={d.id}>
                  <td data-label="Type">
                    <span className="type-cell">
                      <TypeIcon schema={schema} />
                      {schema?.label ?? d.type}
                    </span>
                  </td>
                  <td data-label="Target" className="target">
                    <Link to={`/destinations/${encodeURIComponent(d.id)}`}>{d.target || d.id}</Link>
                  </td>
                  <td data-label="Topics">
                    <Topics topics={d.topics} />
                  </td>
                  <td data-label="Status">
                    <StatusBadge status={d.disabled_at ? 'disabled' : 'enabled'} />
                  </td>
                  <td data-label="Last delivery">
                    <LastDelivery destination={d} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
