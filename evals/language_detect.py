"""Measure language detectors on short chat messages (written for this script, no third-party text).

Usage: python evals/language_detect.py [--candidates py3langid,langdetect,lingua]

Prints, per candidate, accuracy per language and overall, the time per message (warm), and the time
to import and build the detector. `localmem.text.language.detect` is always measured as "localmem"
(py3langid restricted to the languages localmem supports, with the script and length rules on top).
"""

from __future__ import annotations

import argparse
import time

MESSAGES: dict[str, list[str]] = {
    "en": [
        "ok see you tomorrow",
        "Did you get the tickets for Saturday?",
        "I'm running late, traffic is awful",
        "my sister moved to Lisbon last month",
        "haha that's hilarious",
        "Can you send me the photos from the trip?",
        "We adopted a puppy yesterday!",
        "what time does the game start",
        "I finally finished the marathon training plan",
        "dinner at mine on Friday?",
        "The meeting got moved to next week",
        "I bought a new bike, it's so fast",
    ],
    "de": [
        "bis morgen dann",
        "Hast du die Karten für Samstag bekommen?",
        "Ich komme später, der Verkehr ist furchtbar",
        "meine Schwester ist letzten Monat nach Lissabon gezogen",
        "haha wie lustig",
        "Kannst du mir die Fotos vom Urlaub schicken?",
        "Wir haben gestern einen Welpen geholt!",
        "wann fängt das Spiel an",
        "Ich habe endlich den Marathon-Trainingsplan geschafft",
        "Abendessen bei mir am Freitag?",
        "Das Treffen wurde auf nächste Woche verschoben",
        "Ich hab mir ein neues Fahrrad gekauft, echt schnell",
    ],
    "es": [
        "vale, nos vemos mañana",
        "¿Conseguiste las entradas para el sábado?",
        "Llego tarde, el tráfico está fatal",
        "mi hermana se mudó a Lisboa el mes pasado",
        "jajaja qué gracioso",
        "¿Me mandas las fotos del viaje?",
        "¡Ayer adoptamos un perrito!",
        "a qué hora empieza el partido",
        "Por fin terminé el plan de entrenamiento para la maratón",
        "¿cenamos en mi casa el viernes?",
        "La reunión se pasó a la semana que viene",
        "Me compré una bici nueva, es rapidísima",
    ],
    "fr": [
        "ok à demain alors",
        "Tu as eu les billets pour samedi ?",
        "Je suis en retard, la circulation est horrible",
        "ma sœur a déménagé à Lisbonne le mois dernier",
        "mdr trop drôle",
        "Tu peux m'envoyer les photos du voyage ?",
        "On a adopté un chiot hier !",
        "le match commence à quelle heure",
        "J'ai enfin fini mon programme d'entraînement pour le marathon",
        "dîner chez moi vendredi ?",
        "La réunion a été repoussée à la semaine prochaine",
        "Je me suis acheté un nouveau vélo, il est super rapide",
    ],
    "pt": [
        "beleza, até amanhã",
        "Você conseguiu os ingressos para sábado?",
        "Vou me atrasar, o trânsito está horrível",
        "minha irmã se mudou para Lisboa mês passado",
        "kkkkk que engraçado",
        "Pode me mandar as fotos da viagem?",
        "Adotamos um cachorrinho ontem!",
        "que horas começa o jogo",
        "Finalmente terminei o plano de treino para a maratona",
        "jantar lá em casa na sexta?",
        "A reunião foi adiada para a semana que vem",
        "Comprei uma bicicleta nova, é muito rápida",
    ],
    "it": [
        "ok ci vediamo domani",
        "Hai preso i biglietti per sabato?",
        "Sono in ritardo, il traffico è terribile",
        "mia sorella si è trasferita a Lisbona il mese scorso",
        "Mi mandi le foto del viaggio?",
        "Ieri abbiamo adottato un cucciolo!",
    ],
    "nl": [
        "oké tot morgen",
        "Heb je de kaartjes voor zaterdag gekregen?",
        "Ik ben te laat, het verkeer is vreselijk",
        "mijn zus is vorige maand naar Lissabon verhuisd",
        "Kun je me de foto's van de reis sturen?",
        "We hebben gisteren een puppy geadopteerd!",
    ],
    "zh": [
        "好的，明天见",
        "你拿到周六的票了吗？",
        "我要迟到了，堵车太严重",
        "我姐姐上个月搬到北京了",
        "哈哈哈太好笑了",
        "你能把旅行的照片发给我吗？",
        "我们昨天领养了一只小狗！",
        "比赛几点开始",
        "我终于完成了马拉松训练计划",
        "周五来我家吃晚饭？",
        "会议改到下周了",
        "我买了一辆新自行车，特别快",
    ],
    "ja": [
        "了解、また明日ね",
        "土曜日のチケット取れた？",
        "ごめん遅れる、渋滞がひどい",
        "姉が先月リスボンに引っ越したよ",
        "笑った、面白すぎ",
        "旅行の写真送ってくれる？",
        "昨日子犬を迎えたんだ！",
        "試合は何時から？",
        "やっとマラソンの練習メニューが終わった",
        "金曜日うちで夕飯どう？",
        "会議は来週に延期になった",
        "新しい自転車を買った、すごく速い",
    ],
}


def _candidates(names: list[str]):
    out = {}
    for name in names:
        t0 = time.perf_counter()
        if name == "localmem":
            from localmem.text.language import detect

            detect("warm up the model")
            fn = detect
        elif name == "py3langid":
            import py3langid

            py3langid.classify("warm up")
            fn = lambda s: py3langid.classify(s)[0]  # noqa: E731
        elif name == "langdetect":
            from langdetect import DetectorFactory
            from langdetect import detect as ld

            DetectorFactory.seed = 0
            ld("warm up the model")

            def fn(s: str) -> str:
                try:
                    return ld(s).split("-")[0]
                except Exception:
                    return "und"
        elif name == "lingua":
            from lingua import LanguageDetectorBuilder

            det = LanguageDetectorBuilder.from_all_languages().build()
            det.detect_language_of("warm up")

            def fn(s: str) -> str:
                lang = det.detect_language_of(s)
                return lang.iso_code_639_1.name.lower() if lang else "und"
        else:
            raise SystemExit(f"unknown candidate {name}")
        out[name] = (fn, time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--candidates", default="localmem,py3langid,langdetect,lingua")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    items = [(lang, s) for lang, msgs in MESSAGES.items() for s in msgs]
    langs = list(MESSAGES)
    print(f"{len(items)} messages, languages: {' '.join(langs)}")
    print("candidate   " + " ".join(f"{lang:>4}" for lang in langs) + "   all  ms/msg  load s")
    for name, (fn, load_s) in _candidates(args.candidates.split(",")).items():
        right = {lang: 0 for lang in langs}
        wrong: list[str] = []
        for lang, s in items:
            got = fn(s)
            if got == lang:
                right[lang] += 1
            else:
                wrong.append(f"{lang}->{got}: {s}")
        t0 = time.perf_counter()
        for _ in range(args.repeat):
            for _lang, s in items:
                fn(s)
        ms = (time.perf_counter() - t0) * 1000 / (args.repeat * len(items))
        acc = {lang: 100 * right[lang] / len(MESSAGES[lang]) for lang in langs}
        total = 100 * sum(right.values()) / len(items)
        print(
            f"{name:<11} " + " ".join(f"{acc[lang]:4.0f}" for lang in langs) + f" {total:5.1f} {ms:7.3f} {load_s:7.2f}"
        )
        for w in wrong:
            print("   ", w)


if __name__ == "__main__":
    main()
