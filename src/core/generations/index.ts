export * from "./answer-fold";
export * from "./answer-size";
export * from "./chunks";
export * from "./generation-schemas";
export * from "./short-answer";
