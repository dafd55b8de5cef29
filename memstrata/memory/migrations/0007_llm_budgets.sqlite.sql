-- memstrata migration 0007: a consolidation run's token budget shared by all its workers (reserve/settle). Never edit; add a new migration.

CREATE TABLE consolidation_llm_budgets (
	run_id VARCHAR(32) NOT NULL, 
	budget BIGINT NOT NULL, 
	spent BIGINT NOT NULL, 
	reserved BIGINT NOT NULL, 
	calls INTEGER NOT NULL, 
	refused INTEGER NOT NULL, 
	updated_at FLOAT NOT NULL, 
	PRIMARY KEY (run_id)
);
