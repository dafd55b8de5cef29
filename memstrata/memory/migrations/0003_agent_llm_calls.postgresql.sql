-- 0003: every model call the agent makes (prompt, response, tool calls, tokens, latency)
CREATE TABLE agent_llm_calls (
	id SERIAL NOT NULL, 
	user_id VARCHAR(256) NOT NULL, 
	task_id VARCHAR(64), 
	turn INTEGER, 
	purpose VARCHAR(32) NOT NULL, 
	model VARCHAR(200) NOT NULL, 
	prompt_hash VARCHAR(64) NOT NULL, 
	messages JSONB NOT NULL, 
	tools JSONB NOT NULL, 
	response JSONB, 
	error TEXT, 
	prompt_tokens INTEGER NOT NULL, 
	completion_tokens INTEGER NOT NULL, 
	latency_ms FLOAT NOT NULL, 
	attempts INTEGER NOT NULL, 
	at FLOAT NOT NULL, 
	PRIMARY KEY (id)
);

CREATE INDEX ix_agent_llm_calls_user_task ON agent_llm_calls (user_id, task_id, id);
