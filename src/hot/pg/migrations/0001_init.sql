-- 0001: the registry. PostgreSQL is the source of truth; Redis is derived from these tables.
CREATE TABLE sandboxes (
  uuid            uuid PRIMARY KEY,
  name            text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 64),
  prefix          text NOT NULL CHECK (prefix ~ '^[a-z0-9]{1,16}$'),
  key_hash        bytea NOT NULL UNIQUE,           -- sha256 of the API key; the key itself is never stored
  tier            text NOT NULL,
  lat             double precision CHECK (lat BETWEEN -90 AND 90),
  lon             double precision CHECK (lon BETWEEN -180 AND 180),
  created_at      timestamptz NOT NULL DEFAULT now(),
  CHECK ((lat IS NULL) = (lon IS NULL))
);
CREATE INDEX sandboxes_tier_created ON sandboxes (tier, created_at, uuid);
CREATE INDEX sandboxes_created ON sandboxes (created_at, uuid);

-- who changed a sandbox's tier, and when
CREATE TABLE tier_changes (
  id          bigserial PRIMARY KEY,
  sandbox     uuid NOT NULL REFERENCES sandboxes ON DELETE CASCADE,
  old_tier    text NOT NULL,
  new_tier    text NOT NULL,
  changed_by  text NOT NULL,
  changed_at  timestamptz NOT NULL DEFAULT now()
);

CREATE SEQUENCE service_seq;
CREATE TABLE services (
  id             text PRIMARY KEY,
  ns             text NOT NULL,                        -- 'production' or a sandbox uuid
  seq            bigint NOT NULL UNIQUE DEFAULT nextval('service_seq'), -- stable paging order
  endpoint       text NOT NULL,
  deprecated     boolean NOT NULL DEFAULT false,
  deprecated_at  timestamptz,
  locked         boolean NOT NULL DEFAULT false,
  sunset_date    date,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  CHECK (ns = 'production' OR ns ~ '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$')
);
CREATE INDEX services_ns_seq ON services (ns, seq);

CREATE TABLE service_capabilities (
  service_id  text NOT NULL REFERENCES services ON DELETE CASCADE,
  capability  text NOT NULL CHECK (capability ~ '^[a-z0-9._-]{1,64}$'),
  ord         smallint NOT NULL,
  PRIMARY KEY (service_id, capability)
);
CREATE INDEX service_capabilities_cap ON service_capabilities (capability);

CREATE TABLE service_properties (
  service_id  text NOT NULL REFERENCES services ON DELETE CASCADE,
  key         text NOT NULL CHECK (key ~ '^[a-z0-9._-]{1,64}$'),
  value       text NOT NULL CHECK (char_length(value) BETWEEN 1 AND 256),
  PRIMARY KEY (service_id, key)
);

-- IoT profiles live in their own table (contract: "IoT profiles are stored in their own table")
CREATE TABLE iot_profiles (
  service_id      text PRIMARY KEY REFERENCES services ON DELETE CASCADE,
  device_classes  text[] NOT NULL CHECK (cardinality(device_classes) BETWEEN 1 AND 32),
  protocols       text[] NOT NULL CHECK (cardinality(protocols) BETWEEN 1 AND 32)
);

-- replacement candidates of a deprecated service, ranked as registered
CREATE TABLE replacements (
  service_id    text NOT NULL REFERENCES services ON DELETE CASCADE,
  candidate_id  text NOT NULL REFERENCES services ON DELETE CASCADE,
  rank          integer NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (service_id, candidate_id),
  CHECK (service_id <> candidate_id)
);
CREATE INDEX replacements_candidate ON replacements (candidate_id);

-- transactional outbox: one row per committed write, deleted once Redis has it.
-- Its id is the write's revision; the index applies a state only if it is the newest.
CREATE TABLE outbox (
  id          bigserial PRIMARY KEY,
  ns          text NOT NULL,
  service_id  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
