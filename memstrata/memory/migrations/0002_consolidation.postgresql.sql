-- memstrata migration 0002: consolidation runs, actions, leases, sources, scheduler jobs (postgresql). Never edit; add a new migration.

CREATE TABLE consolidation_runs (
	id VARCHAR(32) NOT NULL, 
	job VARCHAR(32) NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	only_user VARCHAR(256), 
	slot FLOAT, 
	method VARCHAR(16) NOT NULL, 
	started_at FLOAT NOT NULL, 
	finished_at FLOAT, 
	heartbeat_at FLOAT NOT NULL, 
	holder VARCHAR(200) NOT NULL, 
	cursor VARCHAR(256), 
	batches INTEGER NOT NULL, 
	resumed INTEGER NOT NULL, 
	users_done INTEGER NOT NULL, 
	counts JSONB NOT NULL, 
	errors JSONB NOT NULL, 
	llm_calls INTEGER NOT NULL, 
	prompt_tokens INTEGER NOT NULL, 
	completion_tokens INTEGER NOT NULL, 
	token_budget INTEGER, 
	options JSONB NOT NULL, 
	undone_by VARCHAR(32), 
	PRIMARY KEY (id)
);

CREATE INDEX ix_consolidation_runs_job_status ON consolidation_runs (job, status);

CREATE INDEX ix_consolidation_runs_started ON consolidation_runs (started_at);

CREATE TABLE consolidation_actions (
	id SERIAL NOT NULL, 
	run_id VARCHAR(32) NOT NULL, 
	user_id VARCHAR(256) NOT NULL, 
	memory_id VARCHAR(32), 
	action VARCHAR(32) NOT NULL, 
	before JSONB, 
	after JSONB, 
	reason TEXT NOT NULL, 
	at FLOAT NOT NULL, 
	batch INTEGER NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(run_id) REFERENCES consolidation_runs (id)
);

CREATE INDEX ix_consolidation_actions_run ON consolidation_actions (run_id, id);

CREATE INDEX ix_consolidation_actions_user_memory ON consolidation_actions (user_id, memory_id);

CREATE TABLE consolidation_leases (
	name VARCHAR(64) NOT NULL, 
	holder VARCHAR(200), 
	acquired_at FLOAT, 
	expires_at FLOAT, 
	run_id VARCHAR(32), 
	last_slot FLOAT, 
	PRIMARY KEY (name)
);

CREATE TABLE consolidation_sources (
	user_id VARCHAR(256) NOT NULL, 
	kind VARCHAR(16) NOT NULL, 
	source_id VARCHAR(256) NOT NULL, 
	last_item BIGINT NOT NULL, 
	memory_id VARCHAR(32), 
	run_id VARCHAR(32) NOT NULL, 
	at FLOAT NOT NULL, 
	PRIMARY KEY (user_id, kind, source_id)
);

CREATE TABLE memstrata_scheduler_jobs (
	id VARCHAR(191) NOT NULL, 
	next_run_time FLOAT(25), 
	job_state BYTEA NOT NULL, 
	PRIMARY KEY (id)
);

CREATE INDEX ix_memstrata_scheduler_jobs_next_run_time ON memstrata_scheduler_jobs (next_run_time);

INSERT INTO consolidation_leases (name) VALUES ('summarize');

INSERT INTO consolidation_leases (name) VALUES ('expire');

INSERT INTO consolidation_leases (name) VALUES ('conflicts');
