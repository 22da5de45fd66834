import { storageConformance } from "../conformance/storage";
import { tempRoots } from "./temp-root";

const temp = tempRoots();

storageConformance("JSONLRepo", () => temp.repo());
