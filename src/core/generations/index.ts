export * from "./answer-fold";
export * from "./chunks";
export * from "./generation-schemas";
