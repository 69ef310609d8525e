"""``make soak`` / ``memq soak``: replay thousands of messages over many conversations
through real Redis, PostgreSQL, Celery workers and a scripted LLM while injecting
faults, one at a time and then mixed, and prove from the producer's own log of what it
acknowledged that nothing was lost or duplicated.

The soak runs on services of its own (a redis-server and a PostgreSQL under
``<data_dir>/soak``), since it kills and restarts them.

- ``services``: the soak's Redis (with an AOF-size recorder, to simulate losing the last
  second of writes) and PostgreSQL;
- ``llm``: a scripted OpenAI-compatible LLM that can be switched to failing;
- ``workers``: Celery worker and beat processes that can be killed, stopped, restarted;
- ``load``: the producer side: conversations, sending at a rate, the acknowledgement log;
- ``faults``: what each fault does and undoes;
- ``faults_resources``: resources running out: Redis full, a full disk under Redis or
  PostgreSQL, sustained overload; their levers (``maxmemory``, a file-size limit, the
  backlog) in ``resource_levers``;
- ``verify``: recovery watching, and lost / duplicated / order from PostgreSQL;
- ``runner``: the phases and the report.
"""
