// The ceql Spark shim (jvm-shim/), for sbt users: `sbt package` at the repository root.
// `python -m ceql.spark.build_jar` builds the same jar with the Scala compiler pyspark ships
// (no sbt needed); tests/spark/test_build.py checks these versions against the installed pyspark.

ThisBuild / organization := "org.ceql"
ThisBuild / version      := "0.1.0"
ThisBuild / scalaVersion := "2.13.18"

val sparkVersion = "4.3.0"

lazy val shim = (project in file("jvm-shim"))
  .settings(
    name := "ceql-shim",
    scalacOptions ++= Seq("-release", "17", "-deprecation", "-feature", "-Werror"),
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql"  % sparkVersion % "provided",
      "org.apache.spark" %% "spark-core" % sparkVersion % "provided"
    ),
    Compile / packageBin / artifactPath :=
      (ThisBuild / baseDirectory).value / "python" / "ceql" / "jars" / "ceql-shim.jar"
  )
