"""A round trip through the Python client openapi-generator makes of the served document
(test/clients/python.test.ts runs it): python roundtrip.py setup|read|finish [ids...], one JSON
line out. BASE_URL, API_KEY and HOOK_URL come from the environment."""
import json
import os
import sys

import switchyard_client as sc

TENANT = "py-co"
config = sc.Configuration(host=os.environ["BASE_URL"], access_token=os.environ["API_KEY"])
with sc.ApiClient(config) as client:
    tenants = sc.TenantsApi(client)
    destinations = sc.DestinationsApi(client)
    publish = sc.PublishApi(client)
    events = sc.EventsApi(client)
    attempts = sc.AttemptsApi(client)
    step = sys.argv[1]
    if step == "setup":
        tenant = tenants.upsert_tenant(TENANT)
        hook = sc.DestinationCreate.from_dict({"type": "webhook", "topics": "*", "config": {"url": os.environ["HOOK_URL"]}})
        destination = destinations.create_tenant_destination(TENANT, hook)
        published = publish.publish_event(sc.PublishRequest.from_dict({"tenant_id": TENANT, "topic": "user.created", "data": {"n": 1}}))
        out = {
            "tenant": tenant.id,
            "destination": destination.id,
            "type": destination.type,
            "event": published.id,
            "routed": published.destination_ids,
        }
    elif step == "read":
        listed = events.list_tenant_events(TENANT)
        event = events.get_tenant_event(TENANT, sys.argv[2])
        page = attempts.list_tenant_attempts(TENANT, include="event")
        out = {
            "events": [e.id for e in listed.models],
            "event": {"id": event.id, "data": event.data},
            "attempts": [{"status": a.status, "event": a.event.id if a.event else None} for a in page.models],
        }
    else:
        destination, event = sys.argv[2], sys.argv[3]
        retried = attempts.retry_event(sc.RetryRequest.from_dict({"event_id": event, "destination_id": destination}))
        deleted = destinations.delete_tenant_destination(TENANT, destination)
        try:
            destinations.get_tenant_destination(TENANT, destination)
            gone = 200
        except sc.ApiException as err:
            gone = err.status
        out = {"retried": retried.success, "deleted": deleted.success, "gone": gone}
    print(json.dumps(out))
