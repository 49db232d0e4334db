// What a Kafka release's own classes say about its metadata versions and features, printed as
// JSON for kraft_audit/testing/kafka_facts.py. Run as a single-file program with the release's
// jars on the classpath:  java -cp '<jars>/*' KafkaFacts.java
// Everything is read by reflection, so one source runs on every line: a method or class a line
// does not have is left out of what it prints.
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

public class KafkaFacts {
    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder("{\"metadata_versions\": [");
        Class<?> mv = Class.forName("org.apache.kafka.server.common.MetadataVersion");
        Object[] levels = (Object[]) mv.getMethod("values").invoke(null);
        // the is*() capabilities of a level (isCidrAclSupported, ...): which this line has,
        // and at each level which of them hold
        List<Method> capabilities = new ArrayList<>();
        for (Method m : mv.getMethods()) {
            if (m.getName().startsWith("is") && m.getParameterCount() == 0
                    && m.getReturnType() == boolean.class && !Modifier.isStatic(m.getModifiers())
                    && !m.getName().equals("isProduction")) {
                capabilities.add(m);
            }
        }
        for (int i = 0; i < levels.length; i++) {
            Object level = levels[i];
            List<String> holds = new ArrayList<>();
            for (Method m : capabilities) {
                if ((boolean) m.invoke(level)) holds.add(m.getName());
            }
            holds.sort(null);
            out.append(i == 0 ? "\n" : ",\n").append("  {\"level\": ").append(call(level, "featureLevel"))
               .append(", \"version\": ").append(quote(String.valueOf(call(level, "version"))))
               .append(", \"production\": ").append(call(level, "isProduction"))
               .append(", \"metadata_changed\": ").append(call(level, "didMetadataChange"))
               .append(", \"holds\": ").append(quoted(holds)).append("}");
        }
        List<String> names = new ArrayList<>();
        for (Method m : capabilities) names.add(m.getName());
        names.sort(null);
        out.append("],\n\"capabilities\": ").append(quoted(names))
           .append(",\n\"features\": ").append(features())
           .append(",\n\"control_records\": ").append(controlRecords()).append("}");
        System.out.println(out);
    }

    // Feature (4.x): each production feature's levels and what each level depends on
    static String features() throws Exception {
        Class<?> feature;
        try {
            feature = Class.forName("org.apache.kafka.server.common.Feature");
        } catch (ClassNotFoundException e) {
            return "null";  // a line before Feature (3.x) says nothing here
        }
        StringBuilder out = new StringBuilder("{");
        String sep = "\n";
        for (Object f : (List<?>) feature.getField("PRODUCTION_FEATURES").get(null)) {
            out.append(sep).append("  ").append(quote((String) call(f, "featureName")))
               .append(": {\"latest_production\": ").append(call(f, "latestProduction"))
               .append(", \"levels\": {");
            String levelSep = "";
            for (Object v : (Object[]) call(f, "featureVersions")) {
                @SuppressWarnings("unchecked")
                Map<String, Object> needs = new TreeMap<>((Map<String, ?>) call(v, "dependencies"));
                StringBuilder deps = new StringBuilder("{");
                String depSep = "";
                for (Map.Entry<String, Object> d : needs.entrySet()) {
                    deps.append(depSep).append(quote(d.getKey())).append(": ").append(d.getValue());
                    depSep = ", ";
                }
                out.append(levelSep).append(quote(String.valueOf(call(v, "featureLevel")))).append(": ")
                   .append(deps).append("}");
                levelSep = ", ";
            }
            out.append("}}");
            sep = ",\n";
        }
        return out.append("}").toString();
    }

    // ControlRecordType: the control records a log may hold, by their type id (UNKNOWN is -1)
    static String controlRecords() throws Exception {
        Class<?> type;
        try {
            type = Class.forName("org.apache.kafka.common.record.internal.ControlRecordType");
        } catch (ClassNotFoundException e) {
            type = Class.forName("org.apache.kafka.common.record.ControlRecordType");  // before 4.2
        }
        StringBuilder out = new StringBuilder("{");
        String sep = "";
        for (Object t : (Object[]) type.getMethod("values").invoke(null)) {
            out.append(sep).append(quote(String.valueOf(call(t, "type")))).append(": ").append(quote(t.toString()));
            sep = ", ";
        }
        return out.append("}").toString();
    }

    static Object call(Object target, String method) throws Exception {
        Method m = target.getClass().getMethod(method);
        m.setAccessible(true);  // an enum constant with a body is an anonymous class
        return m.invoke(target);
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    static String quoted(List<String> names) {
        List<String> q = new ArrayList<>();
        for (String n : names) q.add(quote(n));
        return "[" + String.join(", ", q) + "]";
    }
}
