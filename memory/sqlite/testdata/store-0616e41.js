const a = await memory.remember({content: "The billing service deploys with make deploy-billing", layer: "procedural", tags: ["billing", "deploy"], entities: ["billing-service"]});
await memory.remember({content: "Postgres backups run nightly at 02:00", tags: ["backup"]});
await memory.remember({content: "Deploy failed because the certificate expired", layer: "episodic"});
await memory.task_add({content: "Renew the TLS certificate", due_at: "2030-01-01T00:00:00Z"});
await memory.relate({from: "billing-service", to: "postgres", type: "uses"});
await workspace.write({path: "notes/plan.md", data: "# plan\nship it"});
await skills.save({name: "greet", description: "Says hello", code: "return 'hello ' + (args.name || 'you')"});
return a.id;
