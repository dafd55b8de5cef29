-- memstrata migration 0006: partitioned consolidation runs - a run's buckets of users, claimed by workers (postgresql). Never edit; add a new migration.

ALTER TABLE consolidation_runs ADD COLUMN partitions INTEGER;

CREATE TABLE consolidation_partitions (
	run_id VARCHAR(32) NOT NULL, 
	part INTEGER NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	holder VARCHAR(200), 
	lease_until FLOAT, 
	heartbeat_at FLOAT, 
	claims INTEGER NOT NULL, 
	cursor VARCHAR(256), 
	users_done INTEGER NOT NULL, 
	batches INTEGER NOT NULL, 
	counts JSONB NOT NULL, 
	errors JSONB NOT NULL, 
	method VARCHAR(16) NOT NULL, 
	started_at FLOAT, 
	finished_at FLOAT, 
	PRIMARY KEY (run_id, part), 
	FOREIGN KEY(run_id) REFERENCES consolidation_runs (id)
);

CREATE INDEX ix_consolidation_partitions_claim ON consolidation_partitions (status, lease_until)
