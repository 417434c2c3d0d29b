// How tests read what the user client received: loose JSON, reached into without a schema
// (`n.params.goal.status`). The product's own code sees it as `unknown` (src/demo/userClient.ts's
// type parameter) and narrows it; tests pick this view with `UserClient<Json>`.
export type Json = any;
